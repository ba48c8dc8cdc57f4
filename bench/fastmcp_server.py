"""FastMCP's rows: ``bench.echo`` (a string in, the same string out), served the way FastMCP
documents for HTTP, ``run(transport="http")``, with its defaults otherwise; and with
``--workers N``, the way its deployment guide scales it: the stateless ASGI app
(``http_app(stateless_http=True)``) under uvicorn with N worker processes (what
``uvicorn app:app --workers N`` runs), serving ``bench.cpu5ms`` too (a sync tool spending 5 ms
of its thread's CPU in Python per call, like ``bench.modules.CPU_SOURCE``).

Runs inside FastMCP's own venv (``bench.capacity_servers.ensure_fastmcp_venv``), never ours:

    .cache/bench-fastmcp-4.2.3/bin/python bench/fastmcp_server.py --transport streamable-http --port P
    .cache/bench-fastmcp-4.2.3/bin/python bench/fastmcp_server.py --workers 2 --port P
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path
from typing import Any

CPU_SECONDS = 0.005  # bench.modules.CPU_MS (this file runs in FastMCP's venv, without bench)


def build() -> Any:
    """The FastMCP server with both tools."""
    # Imported by name: FastMCP is installed only in its own venv, where this script runs.
    fastmcp: Any = importlib.import_module("fastmcp")
    server = fastmcp.FastMCP("bench-fastmcp")

    async def echo(text: str) -> dict[str, str]:
        """Echo the text back."""
        return {"text": text}

    def cpu5ms(text: str) -> dict[str, str]:
        """Spend 5 ms of CPU, then echo the text."""
        deadline = time.thread_time() + CPU_SECONDS
        spins = 0
        while time.thread_time() < deadline:
            spins += 1
        return {"text": text}

    server.tool(echo, name="bench.echo")
    server.tool(cpu5ms, name="bench.cpu5ms")
    return server


def http_app() -> Any:
    """The app each uvicorn worker builds (the deployment guide's ``http_app(stateless_http=True)``)."""
    return build().http_app(stateless_http=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["streamable-http"], default="streamable-http")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=None, help="the stateless app under uvicorn, N processes")
    args = parser.parse_args(argv)
    if args.workers is None:
        build().run(transport="http", host=args.host, port=args.port, log_level="warning", show_banner=False)
        return
    uvicorn: Any = importlib.import_module("uvicorn")
    # An import string, as on uvicorn's command line: each worker process imports and builds the app.
    uvicorn.run(
        "fastmcp_server:http_app",
        factory=True,
        app_dir=str(Path(__file__).resolve().parent),
        workers=args.workers,
        host=args.host,
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
