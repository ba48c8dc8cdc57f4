"""In-process measurements of our package (and of the bare SDK server, in memory).

Each function takes an extensions dir and returns a JSON-able dict. ``memory`` must run in a
fresh process for a clean baseline: ``python -m bench.inproc memory DIR`` prints JSON.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import mcp.types as types
from apcore import Context, Executor, Registry
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls import CallRouter, to_call_tool_result
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.openai_tools import to_openai_tools, tools_from_records
from apcore_mcp.settings import Settings
from bench.bare_server import build_bare_server
from bench.common import median
from bench.modules import ECHO_ID


def discover(extensions: Path) -> Registry:
    registry = Registry(extensions_dir=str(extensions))
    registry.discover()
    return registry


def _timed(fn: Any, reps: int) -> list[float]:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def tool_build(extensions: Path, reps: int = 3) -> dict[str, Any]:
    """Build every tool definition (``ToolCatalog.load``: get_definition + convert + render)."""
    registry = discover(extensions)
    catalog = ToolCatalog(registry)
    times = _timed(catalog.load, reps)
    return {"median_ms": median(times), "min_ms": min(times), "tools": len(catalog), "reps": reps}


def list_tools_server_time(extensions: Path, reps: int = 5) -> dict[str, Any]:
    """The server's side of tools/list: our handler plus the JSON-RPC serialization the SDK does."""
    bridge = Bridge.build(discover(extensions), Settings())
    handler = bridge.server.get_request_handler("tools/list") if hasattr(bridge.server, "get_request_handler") else None
    entry = handler or bridge.server._request_handlers["tools/list"]

    async def once() -> int:
        result = await entry.handler(None, None)
        body = types.JSONRPCResponse(
            jsonrpc="2.0", id=1, result=result.model_dump(by_alias=True, mode="json", exclude_none=True)
        ).model_dump_json(by_alias=True, exclude_unset=True)
        return len(body)

    async def run() -> tuple[list[float], int]:
        size = await once()
        times = []
        for _ in range(reps):
            started = time.perf_counter()
            await once()
            times.append((time.perf_counter() - started) * 1000)
        return times, size

    times, size = asyncio.run(run())
    bridge.close()
    return {"median_ms": median(times), "min_ms": min(times), "bytes": size, "tools": len(bridge.catalog)}


def call_overhead(extensions: Path, calls: int = 1000) -> dict[str, Any]:
    """Our call path (router + rendering) minus ``Executor.call_async`` alone, interleaved per call."""
    registry = discover(extensions)
    executor = Executor(registry)
    catalog = ToolCatalog(registry)
    catalog.load()
    router = CallRouter(executor, catalog)

    async def run() -> tuple[list[float], list[float]]:
        base: list[float] = []
        ours: list[float] = []
        for i in range(calls + 50):
            arguments = {"text": f"x{i}"}
            t0 = time.perf_counter()
            await executor.call_async(ECHO_ID, arguments, Context.create())
            t1 = time.perf_counter()
            result = to_call_tool_result(await router.call(ECHO_ID, arguments))
            t2 = time.perf_counter()
            assert not result.is_error
            if i >= 50:  # warm-up
                base.append((t1 - t0) * 1000)
                ours.append((t2 - t1) * 1000)
        return base, ours

    base, ours = asyncio.run(run())
    return {
        "executor_median_ms": median(base),
        "ours_median_ms": median(ours),
        "overhead_ms": median(ours) - median(base),
        "overhead_mean_ms": sum(ours) / len(ours) - sum(base) / len(base),
        "calls": calls,
    }


def memory_round_trip(extensions: Path, calls: int = 300, *, server: str = "ours") -> dict[str, Any]:
    """Full MCP round trip in memory (the SDK's in-process client, handshake era)."""
    registry = discover(extensions)
    bridge: Bridge | None = None
    if server == "ours":
        bridge = Bridge.build(registry, Settings())
        target: Any = bridge.server
    else:
        target = build_bare_server(registry, use_executor=server == "bare+executor")

    async def run() -> list[float]:
        times = []
        async with Client(target, mode="legacy", cache=None) as client:
            for i in range(calls + 20):
                payload = f"p{i}"
                started = time.perf_counter()
                result = await client.call_tool(ECHO_ID, {"text": payload})
                elapsed = (time.perf_counter() - started) * 1000
                assert json.loads(result.content[0].text)["text"] == payload
                if i >= 20:
                    times.append(elapsed)
        return times

    times = asyncio.run(run())
    if bridge is not None:
        bridge.close()
    return {"median_ms": median(times), "calls": calls}


def openai_export(extensions: Path, *, strict: bool, reps: int = 3) -> dict[str, Any]:
    """``to_openai_tools(registry)`` (builds the records too), and from built records (``/openai/tools``)."""
    registry = discover(extensions)
    count = len(to_openai_tools(registry, strict=strict))
    times = _timed(lambda: to_openai_tools(registry, strict=strict), reps)
    catalog = ToolCatalog(registry)
    catalog.load()
    records = catalog.records()
    cached = _timed(lambda: tools_from_records(records, strict=strict), reps)
    return {"median_ms": median(times), "from_records_median_ms": median(cached), "tools": count, "reps": reps}


def memory(extensions: Path) -> dict[str, Any]:
    """Retained bytes of a built Bridge (catalog, router, server) over a discovered registry."""
    registry = discover(extensions)
    executor = Executor(registry)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    bridge = Bridge.build(executor, Settings())
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    tools = len(bridge.catalog)
    bridge.close()
    return {"retained_bytes": retained, "tools": tools}


def main() -> None:
    what, directory = sys.argv[1], Path(sys.argv[2])
    if what != "memory":
        raise SystemExit(f"unknown measurement {what}")
    sys.stdout.write(json.dumps(memory(directory)) + "\n")


if __name__ == "__main__":
    main()
