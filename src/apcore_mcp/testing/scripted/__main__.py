"""``python -m apcore_mcp.testing.scripted SCRIPT.yaml --transport stdio|streamable-http|sse [--port N]``.

Exit codes: 0 normal shutdown, 2 usage error or a bad script (the message names file and field).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio

from apcore_mcp.testing.fields import DocumentError
from apcore_mcp.testing.scripted.app import run_http, run_stdio
from apcore_mcp.testing.scripted.script import DirectiveTool, Script, load_script
from apcore_mcp.testing.scripted.server import RequestRecord, build_server


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m apcore_mcp.testing.scripted",
        description="An MCP server that answers what its script says, turn by turn.",
    )
    parser.add_argument("script", type=Path, help="the script (YAML)")
    parser.add_argument("--transport", choices=("stdio", "streamable-http", "sse"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="bind address for the HTTP transports")
    parser.add_argument("--port", type=int, default=8000, help="bind port for the HTTP transports")
    parser.add_argument(
        "--record", type=Path, default=None, help="append every request received to this JSON lines file"
    )
    parser.add_argument(
        "--directive-tool",
        default=None,
        metavar="NAME",
        help="serve the in-band directive tool under this name (overrides the script's directive_tool.name)",
    )
    return parser


def script_of(args: argparse.Namespace) -> Script:
    """The script the parsed command line names, with its ``--directive-tool`` applied.

    Raises:
        DocumentError: a bad script (the message names the file and the field).
    """
    script = load_script(args.script)
    if args.directive_tool:
        base = script.directive or DirectiveTool()
        script = replace(script, directive=DirectiveTool(args.directive_tool, base.argument, base.description))
    return script


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        script = script_of(args)
    except DocumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    record = RequestRecord(args.record)
    server = build_server(script, record)
    try:
        if args.transport == "stdio":
            anyio.run(run_stdio, server)
        else:
            run_http(server, record, host=args.host, port=args.port)
    except KeyboardInterrupt:
        pass
    finally:
        record.close()


if __name__ == "__main__":
    main()
