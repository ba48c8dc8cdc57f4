"""``apcore-mcp pins diff|approve --mcp-config FILE [--pins FILE] [TOOL...]``: the pins' command line.

``diff`` is the CI gate: it connects to every upstream of the config, prints what changed since
the pins were taken, and exits 0 only when every tool matches its pin (1: a drift or a new tool;
2: a server not reached, or a usage error). ``approve`` accepts the current definitions (all, or
the ``server.tool`` names given) into the pins file. Neither serves anything.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from apcore_mcp.settings import Settings
from apcore_mcp.upstream.config.parse import UpstreamConfigError, load_config
from apcore_mcp.upstream.pins.gate import EXIT_UNREACHABLE, UnknownTool, approve, diff_report, live_pins
from apcore_mcp.upstream.pins.store import PinsFileError, default_pins_path, read_pins, read_skill_pins


def pins_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apcore-mcp pins", description="Check or accept the upstream tools' pins.")
    parser.add_argument("action", choices=("diff", "approve"), help="diff: the CI gate; approve: accept definitions")
    parser.add_argument("tools", nargs="*", metavar="TOOL", help="approve only these (server.tool, server/skill)")
    parser.add_argument("--mcp-config", metavar="FILE", help="the mcp.json (default: $APCORE_MCP_CONFIG)")
    parser.add_argument("--pins", metavar="FILE", help="the pins file (default: <config stem>.pins.json beside it)")
    return parser


def pins_main(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Run one ``pins`` action; the exit status."""
    environ = os.environ if environ is None else environ
    args = pins_parser().parse_intermixed_args(list(argv))
    config_file = args.mcp_config or environ.get("APCORE_MCP_CONFIG")
    if not config_file:
        return _usage("--mcp-config FILE is required")
    if args.action == "diff" and args.tools:
        return _usage("diff takes no TOOL names")
    path = Path(args.pins) if args.pins else default_pins_path(config_file)
    assert path is not None
    try:
        config = load_config(config_file, environ)
        pinned, pinned_skills = read_pins(path), read_skill_pins(path)
    except (UpstreamConfigError, PinsFileError, OSError) as exc:
        return _usage(str(exc))
    limit = Settings().upstream_max_message_bytes
    live = anyio.run(lambda: live_pins(config, max_message_bytes=limit))
    if args.action == "diff":
        report, status = diff_report(pinned, live, pinned_skills)
        sys.stdout.write(report)
        return status
    try:
        approved = approve(path, live, args.tools)
    except (UnknownTool, PinsFileError) as exc:
        return _usage(str(exc))
    for name in approved:
        print(f"approved {name}")
    print(f"pins written to {path}")
    if live.failed:
        print(f"not reached, pins kept: {', '.join(sorted(live.failed))}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return 0


def _usage(message: str) -> int:
    print(f"apcore-mcp pins: {message}", file=sys.stderr)
    return EXIT_UNREACHABLE
