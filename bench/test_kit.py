"""The test kit's transports side by side: what a fixture-style test costs a user (issue 30).

    .venv/bin/python -m bench.test_kit                          # 10 tests, memory and streamable-http, 3 rounds
    .venv/bin/python -m bench.test_kit --transport stdio --rounds 5

A "test" does what a test with the ``mcp_server`` fixture does, once: start the examples'
extensions directory with ``start_server(apcore_server(...), transport, workdir)``, connect a
2025-11-25 client in an event loop of its own (as pytest-asyncio gives each test), list the
tools, call ``text.stats``, stop the server. A round runs ``--tests`` of them per transport,
the transports in turn, so drift on the machine hits each alike; one round first warms the
imports up and is not counted. Prints one table: the median round's seconds for the tests, per
test, and the ratio to ``streamable-http`` (the issue's goal: memory at most 0.15x).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

from apcore_mcp.testing import RunningServer, apcore_server, start_server
from bench.common import REPO_ROOT, median

EXTENSIONS = REPO_ROOT / "examples" / "extensions"
BASELINE = "streamable-http"
GOAL = 0.15


def one_test(transport: str, workdir: Path) -> None:
    """Start, connect, list, call, stop: one fixture-style test."""
    server = start_server(apcore_server(EXTENSIONS), transport, workdir)
    try:
        anyio.run(_list_and_call, server)
    finally:
        server.stop()


async def _list_and_call(server: RunningServer) -> None:
    async with server.client() as client:
        tools = await client.list_tools()
        result = await client.call_tool("text.stats", {"text": "a b a"})
    if "text.stats" not in [tool.name for tool in tools.tools] or result.structured_content["words"] != 3:
        raise RuntimeError(f"unexpected answer over {server!r}: {result}")


def timed_round(transport: str, tests: int, workdir: Path) -> float:
    started = time.perf_counter()
    for number in range(tests):
        one_test(transport, workdir / f"{transport}-{number}")
    return time.perf_counter() - started


def measure(transports: list[str], tests: int, rounds: int) -> dict[str, list[float]]:
    """Seconds per round of ``tests`` tests, per transport (after one uncounted warm-up test each)."""
    seconds: dict[str, list[float]] = {transport: [] for transport in transports}
    with tempfile.TemporaryDirectory(prefix="bench-test-kit-") as tmp:
        workdir = Path(tmp)
        for transport in transports:
            timed_round(transport, 1, workdir / "warm-up")
        for number in range(rounds):
            for transport in transports:
                seconds[transport].append(timed_round(transport, tests, workdir / f"round-{number}"))
    return seconds


def table(seconds: dict[str, list[float]], tests: int) -> str:
    baseline = median(seconds[BASELINE]) if BASELINE in seconds else None
    lines = [f"{'transport':<16} | {tests} tests (s) | per test (ms) | vs {BASELINE} | rounds (s)"]
    for transport, rounds in seconds.items():
        total = median(rounds)
        ratio = f"{total / baseline:.3f}x" if baseline else "-"
        spread = ", ".join(f"{value:.2f}" for value in rounds)
        lines.append(f"{transport:<16} | {total:12.2f} | {total / tests * 1000:13.1f} | {ratio:>8} | {spread}")
    if baseline and "memory" in seconds:
        met = median(seconds["memory"]) / baseline <= GOAL
        lines.append(f"goal: memory <= {GOAL}x {BASELINE}: {'met' if met else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", action="append", choices=["memory", "stdio", "streamable-http", "sse"])
    parser.add_argument("--tests", type=int, default=10, help="fixture-style tests per round and transport")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    transports = ["memory", BASELINE, *(t for t in args.transport or () if t not in ("memory", BASELINE))]
    print(table(measure(transports, args.tests, args.rounds), args.tests))


if __name__ == "__main__":
    main()
