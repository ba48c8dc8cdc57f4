"""``apcore-mcp`` / ``python -m apcore_mcp``: discover an extensions directory and serve it.

Exit codes: 0 normal shutdown, 1 invalid arguments, 2 usage error or start-up failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from apcore_mcp import __version__
from apcore_mcp.settings import LOG_LEVELS, MAX_NAME_LENGTH, TRANSPORTS

logger = logging.getLogger(__name__)

EXIT_INVALID = 1
EXIT_STARTUP = 2


def _list_arg(value: str) -> list[str]:
    """``a,b`` or a repeated flag: both accumulate."""
    return [part.strip() for part in value.split(",")]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="apcore-mcp",
        description="Serve the apcore modules of an extensions directory as MCP tools.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--extensions-dir", required=True, metavar="DIR", help="apcore extensions directory")
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio", help="MCP transport")
    parser.add_argument("--host", default="127.0.0.1", help="bind address for HTTP transports")
    parser.add_argument("--port", type=int, default=8000, help="bind port for HTTP transports (1-65535)")
    parser.add_argument("--name", default="apcore-mcp", help=f"server name (max {MAX_NAME_LENGTH} chars)")
    parser.add_argument("--version", default=__version__, help="server version reported to clients")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="INFO", help="log verbosity (stderr)")
    parser.add_argument(
        "--tags",
        type=_list_arg,
        action="extend",
        default=None,
        metavar="TAG[,TAG]",
        help="only serve modules carrying all these tags (repeatable)",
    )
    parser.add_argument("--prefix", default=None, help="only serve modules whose id starts with this")
    parser.add_argument(
        "--allowed-hosts",
        type=_list_arg,
        action="extend",
        default=None,
        metavar="HOST[:PORT]",
        help="extra Host header values accepted (besides loopback and the bound host); name, name:port, name:*",
    )
    parser.add_argument(
        "--allowed-origins",
        type=_list_arg,
        action="extend",
        default=None,
        metavar="ORIGIN",
        help="extra browser origins accepted, e.g. https://app.example.com",
    )
    parser.add_argument("--dynamic", action="store_true", help="reflect registry changes live (list_changed)")
    parser.add_argument("--stateless", action="store_true", help="Streamable HTTP without sessions (replicas)")
    parser.add_argument("--json-response", action="store_true", help="answer POST /mcp with JSON, not SSE")
    parser.add_argument("--no-metrics", action="store_true", help="do not serve /metrics")
    parser.add_argument("--explorer", action="store_true", help="serve the browser explorer (HTTP transports)")
    parser.add_argument("--explorer-prefix", default="/explorer", help="URL prefix of the explorer")
    parser.add_argument(
        "--allow-execute", action="store_true", help="let the explorer call tools (a token is needed off loopback)"
    )
    parser.add_argument(
        "--execute-token",
        default=os.environ.get("APCORE_MCP_EXECUTE_TOKEN"),
        help="bearer token for explorer calls (default: $APCORE_MCP_EXECUTE_TOKEN, else random off loopback)",
    )
    return parser


def _fail(message: str, code: int) -> NoReturn:
    print(f"Error: {message}", file=sys.stderr)
    raise SystemExit(code)


def _check_args(args: argparse.Namespace) -> Path:
    path = Path(args.extensions_dir)
    if not path.exists():
        _fail(f"extensions directory does not exist: {args.extensions_dir}", EXIT_INVALID)
    if not path.is_dir():
        _fail(f"extensions path is not a directory: {args.extensions_dir}", EXIT_INVALID)
    if not 1 <= args.port <= 65535:
        _fail("port must be between 1 and 65535", EXIT_INVALID)
    if not args.name:
        _fail("server name must not be empty", EXIT_INVALID)
    if len(args.name) > MAX_NAME_LENGTH:
        _fail(f"server name must not exceed {MAX_NAME_LENGTH} characters", EXIT_INVALID)
    if args.version is not None and not args.version:
        _fail("version must not be empty", EXIT_INVALID)
    if not args.host.strip():
        _fail("host must not be empty", EXIT_INVALID)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    extensions_dir = _check_args(args)

    from apcore import Registry

    from apcore_mcp.run.serve import serve
    from apcore_mcp.settings import configure_logging

    configure_logging(args.log_level)
    registry = Registry(extensions_dir=str(extensions_dir))
    count = registry.discover()
    logger.info("Discovered %d module(s) in %s", count, extensions_dir)
    try:
        serve(
            registry,
            transport=args.transport,
            host=args.host,
            port=args.port,
            name=args.name,
            version=args.version,
            tags=args.tags,
            prefix=args.prefix,
            dynamic=args.dynamic,
            stateless=args.stateless,
            json_response=args.json_response,
            allowed_hosts=args.allowed_hosts,
            allowed_origins=args.allowed_origins,
            metrics=not args.no_metrics,
            explorer=args.explorer,
            explorer_prefix=args.explorer_prefix,
            allow_execute=args.allow_execute,
            execute_token=args.execute_token,
        )
    except ValueError as exc:
        _fail(str(exc), EXIT_INVALID)
    except OSError as exc:
        _fail(f"cannot start the server on {args.host}:{args.port}: {exc.strerror or exc}", EXIT_STARTUP)
    except KeyboardInterrupt:
        pass
