"""In-process measurements of the reference apcore-mcp 0.23.3, run INSIDE its own venv.

    bench/.ref-venv/bin/python bench/ref_inproc.py WHAT DIR [ARG]

WHAT: ``build``, ``openai``, ``call``, ``roundtrip`` or ``memory``. Prints one JSON line.
Calls the reference's public pieces (``MCPServerFactory.build_tools``, ``ExecutionRouter``,
``OpenAIConverter``, ``APCoreMCP``); imports nothing from our package or ``bench``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import time
import tracemalloc
from typing import Any

from apcore import Context, Executor, Registry

ECHO_ID = "bench.echo"


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def discover(directory: str) -> Any:
    registry = Registry(extensions_dir=directory)
    registry.discover()
    return registry


def build(directory: str, reps: int) -> dict[str, Any]:
    from apcore_mcp.server.factory import MCPServerFactory

    registry = discover(directory)
    factory = MCPServerFactory()
    times = []
    count = 0
    for _ in range(reps):
        gc.collect()  # as our side does before each round
        started = time.perf_counter()
        count = len(factory.build_tools(registry))
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": median(times), "min_ms": min(times), "tools": count, "reps": reps}


def openai(directory: str, strict: bool, reps: int) -> dict[str, Any]:
    from apcore_mcp.converters.openai import OpenAIConverter

    registry = discover(directory)
    converter = OpenAIConverter()
    times = []
    count = 0
    for _ in range(reps):
        gc.collect()
        started = time.perf_counter()
        count = len(converter.convert_registry(registry, strict=strict))
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": median(times), "min_ms": min(times), "tools": count, "reps": reps}


def call(directory: str, calls: int) -> dict[str, Any]:
    """``ExecutionRouter.handle_call`` (as its CLI builds it) minus ``Executor.call_async``, interleaved."""
    from apcore_mcp import APCoreMCP

    registry = discover(directory)
    app = APCoreMCP(registry)
    _server, router, _tools, _init, _version = app._build_server_components()
    executor = app.executor

    async def run() -> tuple[list[float], list[float]]:
        base: list[float] = []
        ref: list[float] = []
        for i in range(calls + 50):
            arguments = {"text": f"x{i}"}
            t0 = time.perf_counter()
            await executor.call_async(ECHO_ID, arguments, Context.create())
            t1 = time.perf_counter()
            _content, is_error, _trace = await router.handle_call(ECHO_ID, arguments)
            t2 = time.perf_counter()
            assert not is_error
            if i >= 50:
                base.append((t1 - t0) * 1000)
                ref.append((t2 - t1) * 1000)
        return base, ref

    base, ref = asyncio.run(run())
    return {
        "executor_median_ms": median(base),
        "ref_median_ms": median(ref),
        "overhead_ms": median(ref) - median(base),
        "overhead_mean_ms": sum(ref) / len(ref) - sum(base) / len(base),
        "calls": calls,
    }


def roundtrip(directory: str, calls: int) -> dict[str, Any]:
    """Full MCP round trip in memory (mcp 1.x in-memory client session) against its server."""
    from mcp.shared.memory import create_connected_server_and_client_session

    from apcore_mcp import APCoreMCP

    registry = discover(directory)
    app = APCoreMCP(registry)
    server, _router, _tools, _init, _version = app._build_server_components()

    async def run() -> list[float]:
        times = []
        async with create_connected_server_and_client_session(server) as session:
            await session.list_tools()
            for i in range(calls + 20):
                payload = f"p{i}"
                started = time.perf_counter()
                result = await session.call_tool(ECHO_ID, {"text": payload})
                elapsed = (time.perf_counter() - started) * 1000
                assert json.loads(result.content[0].text)["text"] == payload
                if i >= 20:
                    times.append(elapsed)
        return times

    return {"median_ms": median(asyncio.run(run())), "calls": calls}


def memory(directory: str) -> dict[str, Any]:
    """Retained bytes of the reference's server components (tools, router, handlers)."""
    from apcore_mcp import APCoreMCP

    registry = discover(directory)
    executor = Executor(registry)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    app = APCoreMCP(executor)
    components = app._build_server_components()
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return {"retained_bytes": retained, "tools": len(components[2])}


def main() -> None:
    logging.basicConfig(level=logging.ERROR)
    what, directory = sys.argv[1], sys.argv[2]
    arg = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if what == "build":
        result = build(directory, arg)
    elif what == "openai":
        result = {"strict": openai(directory, True, arg), "plain": openai(directory, False, arg)}
    elif what == "call":
        result = call(directory, arg)
    elif what == "roundtrip":
        result = roundtrip(directory, arg)
    elif what == "memory":
        result = memory(directory)
    else:
        raise SystemExit(f"unknown measurement {what}")
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
