"""Workloads 1-4 and 6 here; 5 in ``bench.throughput``, 7 ``bench.pipeline``, 8 ``bench.auth``, 9-10
``bench.upstream``, 11 ``bench.interactive``, 12 ``bench.replicas``, 13 ``bench.soak``, 14
``bench.capacity``, 15 ``bench.scale``, 16 ``bench.workers``; ``WORKLOADS`` names them all.

Each returns a list of result rows (see ``bench.rows.row``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench import inproc
from bench.auth import auth
from bench.capacity import capacity
from bench.common import (
    REPO_ROOT,
    ServerSpec,
    median,
    open_handshake_session,
    run_json,
    running_server,
    server_specs,
)
from bench.interactive import interactive
from bench.pipeline import pipeline
from bench.replicas import replicas
from bench.rows import BARE, BARE_DIRECT, FLOOR, OURS, REF, Config, figure, guard, ref_json, row
from bench.scale import scale
from bench.soak import soak
from bench.throughput import throughput
from bench.upstream import tool_search, upstream_call
from bench.workers import workers

# -- 1. tool build and tools/list -----------------------------------------------------------------


def http_list_tools(base_url: str, reps: int) -> dict[str, Any]:
    """tools/list over Streamable HTTP with a raw HTTP client (no client-side model parsing)."""
    with httpx.Client(base_url=base_url, timeout=30, follow_redirects=True) as http:
        headers = open_handshake_session(http, "2025-06-18")
        times, tools = [], 0
        for i in range(reps + 1):
            started = time.perf_counter()
            response = http.post("/mcp", json={"jsonrpc": "2.0", "id": i + 1, "method": "tools/list"}, headers=headers)
            body = response.text
            elapsed = (time.perf_counter() - started) * 1000
            if i:
                times.append(elapsed)
            tools = len(_jsonrpc_body(body)["result"]["tools"])
    return {"median_ms": median(times), "tools": tools, "bytes": len(body)}


def _jsonrpc_body(body: str) -> Any:
    if body.lstrip().startswith("{"):
        return json.loads(body)
    data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


def tool_build(cfg: Config) -> list[dict[str, Any]]:
    rows = []
    for n in cfg.sizes:
        directory = cfg.extensions(n)
        reps = max(cfg.reps, 7) if n <= 100 else cfg.reps  # ~0.1 s a rep: more reps, steadier medians
        ours = inproc.tool_build(directory, reps)
        ref = guard(cfg, partial(ref_json, cfg, "build", directory, reps))
        # Best of N: CPU-bound work on a shared VM, where the minimum is the steadiest estimate.
        ours_ms, ref_ms = ours["min_ms"], figure(ref, "min_ms")
        target = met = None
        if n == 100:
            target = "< 0.5x reference"
            met = ref_ms is not None and ours_ms < 0.5 * ref_ms
        rows.append(
            row(
                "1 tool build",
                f"build every tool definition, {n} modules (best of {reps})",
                "ms",
                ours_ms,
                {FLOOR: ours["floor_min_ms"], **({REF: ref_ms} if cfg.include_reference else {})},
                target=target,
                met=met,
                details={"ours": ours, "reference": ref},
            )
        )
    for n in cfg.sizes:
        directory = cfg.extensions(n)
        server_side = inproc.list_tools_server_time(directory, max(cfg.reps, 5))
        bare_side = inproc.list_tools_server_time(directory, max(cfg.reps, 5), bare=True)
        target = met = None
        if n == max(cfg.sizes):
            target = "< 50 ms server time" if n >= 1000 else None
            met = server_side["median_ms"] < 50 if n >= 1000 else None
        rows.append(
            row(
                "1 tool build",
                f"tools/list server time (the server's real loop, request in to wire JSON out), {n} tools",
                "ms",
                server_side["median_ms"],
                {BARE: bare_side["median_ms"]},
                target=target,
                met=met,
                details={OURS: server_side, BARE: bare_side},
            )
        )
        http = {}
        specs = server_specs(directory, include_reference=cfg.include_reference)
        for spec in specs:
            if spec.name == BARE_DIRECT or (cfg.servers is not None and spec.name not in cfg.servers):
                continue
            try:
                with running_server(spec, "streamable-http", log=cfg.log) as (_pid, port):
                    http[spec.name] = http_list_tools(f"http://127.0.0.1:{port}", max(cfg.reps, 5))
            except Exception as exc:
                http[spec.name] = {"error": f"{type(exc).__name__}: {exc}"}
        rows.append(
            row(
                "1 tool build",
                f"tools/list over Streamable HTTP (raw client round trip), {n} tools",
                "ms",
                figure(http.get(OURS), "median_ms"),
                {name: figure(v, "median_ms") for name, v in http.items() if name != OURS},
                details=http,
            )
        )
    return rows


# -- 2. call overhead --------------------------------------------------------------------------------


def call_overhead(cfg: Config) -> list[dict[str, Any]]:
    directory = cfg.extensions(cfg.small)
    ours = inproc.call_overhead(directory, cfg.calls)
    ref = guard(cfg, lambda: ref_json(cfg, "call", directory, cfg.calls))
    rows = [
        row(
            "2 call overhead",
            f"time beyond Executor.call_async per call (in process, {cfg.calls} calls, median diff)",
            "ms",
            ours["overhead_ms"],
            {REF: figure(ref, "overhead_ms")} if cfg.include_reference else {},
            target="< 0.1 ms",
            met=ours["overhead_ms"] < 0.1,
            details={"ours": ours, "reference": ref},
        )
    ]
    # Interleaved rounds (like throughput): machine noise then lands on every server alike.
    times: dict[str, list[float]] = {name: [] for name in (OURS, BARE, BARE_DIRECT)}
    rounds = 3
    for _ in range(rounds):
        for name in times:
            times[name] += inproc.memory_round_trip(directory, cfg.roundtrip_calls // rounds, server=name)["times_ms"]
    trips = {name: {"median_ms": median(values), "calls": len(values)} for name, values in times.items()}
    ref_trip = guard(cfg, lambda: ref_json(cfg, "roundtrip", directory, cfg.roundtrip_calls))
    refs: dict[str, float | None] = {BARE: trips[BARE]["median_ms"], BARE_DIRECT: trips[BARE_DIRECT]["median_ms"]}
    if cfg.include_reference:
        refs[REF] = figure(ref_trip, "median_ms")
    rows.append(
        row(
            "2 call overhead",
            f"full MCP round trip in memory (tools/call, {cfg.roundtrip_calls} calls, median)",
            "ms",
            trips[OURS]["median_ms"],
            refs,
            details={**trips, REF: ref_trip},
        )
    )
    return rows


# -- 3. memory -------------------------------------------------------------------------------------------


def memory(cfg: Config) -> list[dict[str, Any]]:
    """Retained bytes at three sizes; linear when the marginal cost per tool is the same on both steps."""
    lo, hi = min(cfg.sizes), max(cfg.sizes)
    sizes = sorted({lo, (lo + hi) // 2, hi})
    ours: dict[int, Any] = {}
    refs: dict[int, Any] = {}
    rows = []
    for n in sizes:
        directory = cfg.extensions(n)
        ours[n] = run_json([sys.executable, "-m", "bench.inproc", "memory", str(directory)], timeout=300)
        refs[n] = guard(cfg, partial(ref_json, cfg, "memory", directory))
        if n not in cfg.sizes:
            continue
        per100 = ours[n]["retained_bytes"] / ours[n]["tools"] * 100 / 2**20
        ref_per100 = (
            refs[n]["retained_bytes"] / refs[n]["tools"] * 100 / 2**20 if figure(refs[n], "retained_bytes") else None
        )
        rows.append(
            row(
                "3 memory",
                f"retained per 100 tools (tracemalloc, total / tools), {n} tools",
                "MiB",
                per100,
                {REF: ref_per100} if cfg.include_reference else {},
                target="< 1 MiB per 100 tools",
                met=per100 < 1.0,
                details={"ours": ours[n], "reference": refs[n]},
            )
        )

    def steps(results: dict[int, Any]) -> tuple[float, float] | None:
        """Marginal bytes per tool on the lower and the upper step."""
        if len(sizes) < 3 or not all(figure(results.get(k), "retained_bytes") for k in sizes):
            return None
        a, b, c = (results[k] for k in sizes)
        return (
            (b["retained_bytes"] - a["retained_bytes"]) / (b["tools"] - a["tools"]),
            (c["retained_bytes"] - b["retained_bytes"]) / (c["tools"] - b["tools"]),
        )

    mine, theirs = steps(ours), steps(refs)
    if mine:
        g = mine[1] / mine[0]
        rows.append(
            row(
                "3 memory",
                f"linearity: marginal bytes/tool {sizes[1]}->{sizes[2]} over {sizes[0]}->{sizes[1]} (1.0 = linear)",
                "x",
                g,
                {REF: theirs[1] / theirs[0]} if theirs else {},
                target="linear (0.8-1.2)",
                met=0.8 <= g <= 1.2,
                details={"ours_marginal_bytes_per_tool": mine, "reference_marginal_bytes_per_tool": theirs},
            )
        )
        rows.append(
            row(
                "3 memory",
                "marginal retained per 100 tools (slope)",
                "MiB",
                mine[1] * 100 / 2**20,
                {REF: theirs[1] * 100 / 2**20} if theirs else {},
            )
        )
    return rows


# -- 4. OpenAI export ---------------------------------------------------------------------------------


def openai_export(cfg: Config) -> list[dict[str, Any]]:
    rows = []
    for n in cfg.sizes:
        directory = cfg.extensions(n)
        reps = max(cfg.reps, 7) if n <= 100 else cfg.reps
        ref = guard(cfg, partial(ref_json, cfg, "openai", directory, reps))
        for strict in (False, True):
            ours = inproc.openai_export(directory, strict=strict, reps=reps)
            key = "strict" if strict else "plain"
            ref_ms = figure(ref.get(key), "min_ms") if isinstance(ref, dict) and key in ref else None
            rows.append(
                row(
                    "4 openai export",
                    f"to_openai_tools, {n} modules, {'strict' if strict else 'not strict'} (best of {reps})",
                    "ms",
                    ours["min_ms"],
                    {REF: ref_ms} if cfg.include_reference else {},
                    details={"ours": ours, "reference": ref.get(key) if isinstance(ref, dict) else ref},
                )
            )
            rows.append(
                row(
                    "4 openai export",
                    f"OpenAI tools from the built catalog (GET /openai/tools path, best of {reps}), {n} modules, "
                    f"{'strict' if strict else 'not strict'}",
                    "ms",
                    ours["from_records_min_ms"],
                )
            )
    return rows


# -- 6. start-up ---------------------------------------------------------------------------------------


async def _stdio_first_list(spec: ServerSpec, limit_s: float) -> tuple[float, int]:
    params = StdioServerParameters(command=spec.python, args=[*spec.args, "--transport", "stdio"], cwd=str(REPO_ROOT))
    started = time.perf_counter()
    with anyio.fail_after(limit_s):
        async with Client(params, mode="legacy", cache=None) as client:
            tools = (await client.list_tools()).tools
            elapsed = (time.perf_counter() - started) * 1000
    return elapsed, len(tools)


def startup(cfg: Config) -> list[dict[str, Any]]:
    rows = []
    for n in cfg.sizes:
        directory = cfg.extensions(n)
        reps = cfg.startup_reps
        specs = [
            spec
            for spec in server_specs(directory, include_reference=cfg.include_reference)
            if spec.name != BARE_DIRECT and (cfg.servers is None or spec.name in cfg.servers)
        ]
        runs: dict[str, list[tuple[float, int]]] = {spec.name: [] for spec in specs}
        failures: dict[str, str] = {}
        for _ in range(reps):  # interleaved: one start of each server per round
            for spec in specs:
                if spec.name in failures:
                    continue
                try:
                    runs[spec.name].append(anyio.run(_stdio_first_list, spec, 120.0))
                except Exception as exc:
                    failures[spec.name] = f"{type(exc).__name__}: {exc}"
        figures: dict[str, Any] = {
            name: {"error": failures[name]}
            if name in failures
            else {"median_ms": median([r[0] for r in done]), "tools": done[0][1], "reps": reps}
            for name, done in runs.items()
        }
        rows.append(
            row(
                "6 start-up",
                f"process start to first tools/list answer over stdio, {n} modules",
                "ms",
                figure(figures.get(OURS), "median_ms"),
                {k: figure(v, "median_ms") for k, v in figures.items() if k != OURS},
                details=figures,
            )
        )
    return rows


WORKLOADS: dict[str, Callable[[Config], list[dict[str, Any]]]] = {
    "build": tool_build,
    "call": call_overhead,
    "memory": memory,
    "openai": openai_export,
    "throughput": throughput,
    "startup": startup,
    "pipeline": pipeline,
    "auth": auth,
    "upstream": upstream_call,
    "search": tool_search,
    "interactive": interactive,
    "replicas": replicas,
    "soak": soak,
    "capacity": capacity,
    "scale": scale,
    "workers": workers,
}
