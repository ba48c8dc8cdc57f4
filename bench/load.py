"""One load-generator process: several MCP clients calling ``bench.echo`` for a fixed time.

    python -m bench.load --url http://127.0.0.1:P --transport http|sse [--era legacy|modern] \
        --clients 10 --start-at EPOCH --duration 5 --proc 0

Each client connects (before ``--start-at``), then sends sequential calls with unique
payloads until ``start-at + duration`` and checks every reply against its request. Prints
one JSON line: counts, latencies (ms), errors, and this process's CPU seconds during the
window (``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import secrets
import sys
import time
from collections import Counter
from typing import Any

import anyio
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

TOOL = "bench.echo"
MODERN_VERSION = "2026-07-28"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Stats:
    def __init__(self) -> None:
        self.ok = 0
        self.errors = 0
        self.lost = 0
        self.misrouted = 0
        self.connect_failures = 0
        self.in_flight = 0
        self.latencies_ms: list[float] = []
        self.error_kinds: Counter[str] = Counter()


def _describe(exc: BaseException) -> str:
    """The innermost exception of a group, as ``Type: message``."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {str(exc)[:160]}"


def _reply_text(result: Any) -> tuple[bool, str | None]:
    """``(is_error, echoed text)`` of a CallToolResult."""
    if getattr(result, "is_error", False):
        first = result.content[0] if result.content else None
        return True, getattr(first, "text", None)
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict) and "text" in structured:
        return False, structured["text"]
    try:
        return False, json.loads(result.content[0].text).get("text")
    except (ValueError, AttributeError, IndexError):
        return False, None


@contextlib.asynccontextmanager
async def _session(url: str, transport: str, era: str = "legacy") -> Any:
    if transport == "http":
        async with Client(f"{url}/mcp", mode="auto" if era == "modern" else "legacy", cache=None) as client:
            yield client
    else:
        async with sse_client(f"{url}/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def run_client(args: argparse.Namespace, idx: int, stats: Stats, end_at: float) -> None:
    token = secrets.token_hex(4)
    state = {"connected": False, "done": False}
    # One scope bounds the client's whole life (connect, calls, close): nothing can hang.
    with anyio.move_on_after(max(0.0, end_at - time.time()) + args.call_timeout + args.connect_timeout):
        try:
            async with _session(args.url, args.transport, args.era) as session:
                state["connected"] = True
                await anyio.sleep(max(0.0, args.start_at - time.time()))
                await _call_loop(args, idx, token, session, stats, end_at)
                state["done"] = True
        except Exception as exc:
            if not state["connected"]:
                state["failed"] = True
                stats.connect_failures += 1
                stats.error_kinds[f"connect: {_describe(exc)}"] += 1
            elif not state["done"]:
                stats.errors += 1
                stats.error_kinds[f"session: {_describe(exc)}"] += 1
            # else: an error while closing the session after the window; not a call error.
    if not state["connected"] and not state.get("failed"):
        stats.connect_failures += 1
        stats.error_kinds["connect: timed out"] += 1


async def _call_loop(args: argparse.Namespace, idx: int, token: str, session: Any, stats: Stats, end_at: float) -> None:
    if args.era == "modern" and session.protocol_version != MODERN_VERSION:
        # mode="auto" falls back to the handshake era quietly: a 2026-07-28 figure must be one.
        raise RuntimeError(f"the server speaks {session.protocol_version}, not {MODERN_VERSION}")
    seq = 0
    while time.time() < end_at:
        seq += 1
        payload = f"{args.proc}-{idx}-{seq}-{token}"
        started = time.perf_counter()
        stats.in_flight += 1
        try:
            with anyio.fail_after(args.call_timeout):
                result = await session.call_tool(TOOL, {"text": payload})
        except TimeoutError:
            stats.in_flight -= 1
            stats.lost += 1
            stats.error_kinds["no reply within call timeout"] += 1
            continue
        except Exception as exc:
            stats.in_flight -= 1
            stats.errors += 1
            stats.error_kinds[_describe(exc)] += 1
            await anyio.sleep(0.01)  # a broken session must not spin
            continue
        # Not in a ``finally``: a call cancelled at the end of the client's time stays counted as lost.
        stats.in_flight -= 1
        elapsed = (time.perf_counter() - started) * 1000
        is_error, text = _reply_text(result)
        if is_error:
            stats.errors += 1
            stats.error_kinds[f"isError: {str(text)[:120]}"] += 1
        elif text != payload:
            stats.misrouted += 1
            stats.error_kinds["reply does not match its request"] += 1
        else:
            stats.ok += 1
            stats.latencies_ms.append(elapsed)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    end_at = args.start_at + args.duration
    window: dict[str, float] = {}
    # Everything (connects, the last calls, closing the sessions) is bounded in time.
    with anyio.move_on_after(max(0.0, end_at - time.time()) + args.call_timeout + 10):
        async with anyio.create_task_group() as tasks:
            for idx in range(args.clients):
                tasks.start_soon(run_client, args, idx, stats, end_at)
            await anyio.sleep(max(0.0, args.start_at - time.time()))
            window["cpu_before"] = _cpu()
            await anyio.sleep(max(0.0, end_at - time.time()))
            window["cpu"] = _cpu() - window["cpu_before"]
    return {
        "proc": args.proc,
        "clients": args.clients,
        "ok": stats.ok,
        "errors": stats.errors,
        # A call still waiting when the client's time ran out never got its reply.
        "lost": stats.lost + stats.in_flight,
        "misrouted": stats.misrouted,
        "connect_failures": stats.connect_failures,
        "error_kinds": dict(stats.error_kinds.most_common(5)),
        "latencies_ms": [round(x, 3) for x in stats.latencies_ms],
        "cpu_seconds": window.get("cpu"),
        "duration": args.duration,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--transport", choices=["http", "sse"], required=True)
    parser.add_argument("--era", choices=["legacy", "modern"], default="legacy", help="2025-11-25 or 2026-07-28")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--start-at", type=float, required=True, help="epoch seconds")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--proc", type=int, default=0)
    parser.add_argument("--call-timeout", type=float, default=10.0)
    parser.add_argument("--connect-timeout", type=float, default=10.0)
    args = parser.parse_args()
    result = anyio.run(main_async, args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
