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

import anyio
import mcp.types as types
from apcore import Context, Executor, Registry
from mcp import Client
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.router import CallRouter
from apcore_mcp.mcp.results import call_result
from apcore_mcp.openai import to_openai_tools, tools_from_records
from apcore_mcp.settings import Settings
from apcore_mcp.tools.catalog import ToolCatalog
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
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return times


def tool_build(extensions: Path, reps: int = 3) -> dict[str, Any]:
    """Build every tool definition (``ToolCatalog.load``: get_definition + convert + render)."""
    registry = discover(extensions)
    catalog = ToolCatalog(registry)
    ids = registry.list()
    times: list[float] = []
    floor: list[float] = []
    # Interleaved rounds, each after a full collection, so machine noise hits both sides alike.
    # The floor is what every bridge pays: apcore's descriptors (model_json_schema twice a module).
    for _ in range(reps):
        times += _timed(catalog.load, 1)
        floor += _timed(lambda: [registry.get_definition(module_id) for module_id in ids], 1)
    return {
        "median_ms": median(times),
        "min_ms": min(times),
        "floor_ms": median(floor),
        "floor_min_ms": min(floor),
        "tools": len(catalog),
        "reps": reps,
    }


def list_tools_server_time(extensions: Path, reps: int = 5, *, bare: bool = False) -> dict[str, Any]:
    """Server time of ``tools/list``: request in, wire JSON out, through the server's real loop.

    The request goes through the SDK's own dispatch (middleware, handler, result validation
    and serialization) over in-memory streams; the clock stops once the response message is
    rendered to JSON, as a transport would. No client parsing is included. ``bare`` measures
    the bare SDK server on the same modules instead of ours.
    """
    registry = discover(extensions)
    bridge = None if bare else Bridge.build(registry, Settings())
    server = build_bare_server(registry, use_executor=True) if bridge is None else bridge.server

    every, size, tools = anyio.run(tools_list_times, server, reps + 1)
    times = every[1:]  # the first answer warms what a server may warm
    return {"median_ms": median(times), "min_ms": min(times), "bytes": size, "tools": tools}


async def tools_list_times(server: Any, count: int) -> tuple[list[float], int, int]:
    """``count`` timed ``tools/list`` answers of ``server`` in one in-memory session (handshake first).

    Each time runs from the request sent to the answer rendered as wire JSON; with the last
    answer's size in bytes and its number of tools.
    """
    times: list[float] = []
    size = tools = 0
    async with create_client_server_memory_streams() as (client, server_side), anyio.create_task_group() as tg:
        read, write = client
        tg.start_soon(server.run, server_side[0], server_side[1], server.create_initialization_options())
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}}
        await write.send(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=0, method="initialize", params=init)))
        await read.receive()
        await write.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")))
        for request_id in range(1, count + 1):
            started = time.perf_counter()
            request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/list", params={})
            await write.send(SessionMessage(request))
            answer = await read.receive()
            assert isinstance(answer, SessionMessage), answer
            body = answer.message.model_dump_json(by_alias=True, exclude_unset=True)
            times.append((time.perf_counter() - started) * 1000)
            size, tools = len(body), len(json.loads(body)["result"]["tools"])
        tg.cancel_scope.cancel()
    return times, size, tools


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
            result = call_result(await router.call(ECHO_ID, arguments), modern=False)
            t2 = time.perf_counter()
            assert not result["isError"]
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
                block = result.content[0]
                assert isinstance(block, types.TextContent)
                assert json.loads(block.text)["text"] == payload
                if i >= 20:
                    times.append(elapsed)
        return times

    times = asyncio.run(run())
    return {"median_ms": median(times), "calls": calls, "times_ms": times}


def openai_export(extensions: Path, *, strict: bool, reps: int = 3) -> dict[str, Any]:
    """``to_openai_tools(registry)`` (builds the records too), and from built records (``/openai/tools``)."""
    registry = discover(extensions)
    count = len(to_openai_tools(registry, strict=strict))
    times = _timed(lambda: to_openai_tools(registry, strict=strict), reps)
    catalog = ToolCatalog(registry)
    catalog.load()
    records = catalog.records()
    cached = _timed(lambda: tools_from_records(records, strict=strict), reps)
    return {
        "median_ms": median(times),
        "min_ms": min(times),
        "from_records_median_ms": median(cached),
        "from_records_min_ms": min(cached),
        "tools": count,
        "reps": reps,
    }


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
    return {"retained_bytes": retained, "tools": tools}


def main() -> None:
    what, directory = sys.argv[1], Path(sys.argv[2])
    if what != "memory":
        raise SystemExit(f"unknown measurement {what}")
    sys.stdout.write(json.dumps(memory(directory)) + "\n")


if __name__ == "__main__":
    main()
