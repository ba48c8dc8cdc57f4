"""Workloads 7 and 8: a call through a mounted upstream, and ``search_tools`` on large catalogs.

7. The upstream is ``bench.bare_server --mode direct`` over stdio (it echoes, no apcore
   inside). "direct" is the SDK client's ``call_tool`` on a long-lived session to it;
   "through" is what our server does for a ``tools/call`` of the mounted tool: the Executor
   (validation, ACL, middleware) calling the module, which calls the upstream through the
   pool. Rounds are interleaved so machine noise lands on both alike. The full round trip of
   an in-memory MCP client through our bridge is reported beside it.
8. ``search_tools`` answered by a search-mode bridge (the call router: the meta-tool through
   its executor, the BM25 query, visibility, the compact answer), at 1,000 and 10,000
   generated tools plus the examples, over a rotating set of queries.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from apcore import Context, Executor, Registry
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.config.parse import parse_config
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.names import module_id
from apcore_mcp.upstream.passthrough import mcp_result_of
from apcore_mcp.upstream.toolsets import UpstreamRuntime
from bench.catalogs import register_generated
from bench.common import REPO_ROOT, median, percentile
from bench.modules import ECHO_ID
from bench.rows import Config, row

EXAMPLES = REPO_ROOT / "examples" / "extensions"
QUERIES = (
    "archive invoice records",
    "export customer data with an audit trail",
    "haversine distance between two coordinates",
    "count words in a text",
    "restore a backup in bulk",
    "translate product review",
    "approve payment for compliance",
    "sync calendar across regions",
)

Timed = Callable[[int], Awaitable[Any]]


async def _times(call: Timed, count: int, offset: int) -> list[float]:
    times = []
    for i in range(count):
        started = time.perf_counter()
        await call(offset + i)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _upstream_args(extensions: Path) -> list[str]:
    return ["-m", "bench.bare_server", "--extensions-dir", str(extensions), "--mode", "direct", "--transport", "stdio"]


async def _upstream_calls(extensions: Path, calls: int, rounds: int) -> dict[str, list[float]]:
    args = _upstream_args(extensions)
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO_ROOT))
    config = parse_config({"mcpServers": {"up": {"command": sys.executable, "args": args, "cwd": str(REPO_ROOT)}}}, {})
    mounted = module_id("up", ECHO_ID)
    times: dict[str, list[float]] = {"direct": [], "through": [], "bridge": []}
    executor = Executor(Registry())
    async with UpstreamPool() as pool, Client(params, cache=None) as client:
        runtime = UpstreamRuntime(executor.registry, pool)
        await runtime.apply(config)
        bridge = Bridge.build(executor, Settings())
        async with Client(bridge.server, mode="legacy", cache=None) as ours:

            async def direct(i: int) -> Any:
                result = await client.session.call_tool(ECHO_ID, {"text": f"d{i}"})
                assert not result.is_error

            async def through(i: int) -> Any:
                result = mcp_result_of(await executor.call_async(mounted, {"text": f"t{i}"}, Context.create()))
                assert result is not None
                assert not result.is_error

            async def via_bridge(i: int) -> Any:
                result = await ours.session.call_tool(mounted, {"text": f"b{i}"})
                assert not result.is_error

            for call in (direct, through, via_bridge):
                await _times(call, 20, 0)  # warm-up: first calls pay for imports and caches
            for r in range(rounds):
                for name, call in (("direct", direct), ("through", through), ("bridge", via_bridge)):
                    times[name] += await _times(call, calls // rounds, r * calls)
        await runtime.close()
    return times


def upstream_call(cfg: Config) -> list[dict[str, Any]]:
    times = anyio.run(_upstream_calls, cfg.extensions(cfg.small), cfg.upstream_calls, cfg.upstream_rounds)
    direct, through, bridge = (median(times[name]) for name in ("direct", "through", "bridge"))
    budget = 1.15 * direct + 0.5
    details = {name: {"median_ms": median(values), "p99_ms": percentile(values, 99)} for name, values in times.items()}
    return [
        row(
            "7 upstream call",
            f"tools/call of a mounted stdio upstream: Executor, pool, upstream ({len(times['through'])} calls, median)",
            "ms",
            through,
            {"direct SDK call": direct},
            target="<= 1.15x direct + 0.5 ms",
            met=through <= budget,
            details=details,
        ),
        row(
            "7 upstream call",
            "full MCP round trip: in-memory client -> our server -> upstream (median)",
            "ms",
            bridge,
            {"direct SDK call": direct},
            details=details,
        ),
    ]


def _search_bridge(n: int) -> Bridge:
    registry = Registry(extensions_dir=str(EXAMPLES))
    registry.discover()
    register_generated(registry, n)
    return Bridge.build(Executor(registry), Settings(tool_mode="search"))


async def search_times(bridge: Bridge, calls: int) -> list[float]:
    async def search(i: int) -> Any:
        outcome = await bridge.router.call("search_tools", {"query": QUERIES[i % len(QUERIES)], "limit": 10})
        assert outcome.rendered is not None, outcome
        assert outcome.rendered.structured is not None, outcome
        assert outcome.rendered.structured["tools"], outcome

    await _times(search, len(QUERIES), 0)  # the first query builds the index
    return await _times(search, calls, 0)


def tool_search(cfg: Config) -> list[dict[str, Any]]:
    rows = []
    for n in cfg.search_sizes:
        bridge = _search_bridge(n)
        started = time.perf_counter()
        assert bridge.search is not None
        bridge.search.index()
        index_ms = (time.perf_counter() - started) * 1000
        times = anyio.run(search_times, bridge, cfg.search_calls)
        p50 = median(times)
        target = "p50 < 5 ms" if n >= 10_000 else None
        rows.append(
            row(
                "8 tool search",
                f"search_tools via the call router, {n:,} tools + examples ({len(times)} queries, p50)",
                "ms",
                p50,
                target=target,
                met=p50 < 5 if target else None,
                details={"p50_ms": p50, "p99_ms": percentile(times, 99), "index_build_ms": index_ms, "tools": n + 4},
            )
        )
        rows.append(
            row("8 tool search", f"search_tools, {n:,} tools (p99)", "ms", percentile(times, 99), details={"tools": n})
        )
    return rows
