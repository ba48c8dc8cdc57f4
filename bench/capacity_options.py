"""The capacity workload's command-line options, shared by ``python -m bench`` and ``python -m bench.capacity``."""

from __future__ import annotations

import argparse
from typing import Any

from bench.capacity_servers import SERVERS


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _counts(text: str) -> tuple[int, ...]:
    """``10,50,200`` -> (10, 50, 200)."""
    return tuple(_positive(part.strip()) for part in text.split(","))


def add_capacity_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("capacity (wrk) workload")
    group.add_argument("--rounds", type=_positive, help="capacity: interleaved rounds (default 3; --quick 1)")
    group.add_argument("--seconds", type=_positive, help="capacity: seconds of each wrk run (default 5; --quick 1)")
    group.add_argument(
        "--connections", type=_counts, metavar="N[,N...]", help="capacity: keep-alive connections, e.g. 10,50,200"
    )
    group.add_argument(
        "--server", action="append", choices=SERVERS, help="capacity: only this server (repeatable; default: all)"
    )


def capacity_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The Config fields the options given set."""
    fields = {
        "capacity_rounds": args.rounds,
        "capacity_seconds": args.seconds,
        "capacity_connections": args.connections,
        "capacity_servers": tuple(args.server) if args.server else None,
    }
    return {key: value for key, value in fields.items() if value is not None}
