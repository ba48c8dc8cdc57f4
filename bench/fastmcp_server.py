"""FastMCP's row: one ``bench.echo`` tool (a string in, the same string out), served the way
FastMCP documents for HTTP, ``run(transport="http")``, with its defaults otherwise.

Runs inside FastMCP's own venv (``bench.capacity_servers.ensure_fastmcp_venv``), never ours:

    .cache/bench-fastmcp-4.2.3/bin/python bench/fastmcp_server.py --transport streamable-http --port P
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["streamable-http"], default="streamable-http")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    # Imported by name: FastMCP is installed only in its own venv, where this script runs.
    fastmcp: Any = importlib.import_module("fastmcp")
    server = fastmcp.FastMCP("bench-fastmcp")

    async def echo(text: str) -> dict[str, str]:
        """Echo the text back."""
        return {"text": text}

    server.tool(echo, name="bench.echo")
    server.run(transport="http", host=args.host, port=args.port, log_level="warning", show_banner=False)


if __name__ == "__main__":
    main()
