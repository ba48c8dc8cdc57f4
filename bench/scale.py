"""Workload 15 (scale): how our costs grow with the catalog, the sessions and the clients.

Each series gives one row a size and one growth row: the exponent k in cost ~ size^k from the
series' two ends (1 linear; below 0.9 sublinear; above 1.1 superlinear; 1.8 and up quadratic or
worse), so a size step that costs more than its share shows without reading every figure.

1. Catalog build (``Bridge.build(executor, Settings())``, best of ``reps``) and ``tools/list`` at
   100 / 1,000 / 10,000 generated modules. ``tools/list`` is the server's time over in-memory
   streams (the SDK's dispatch, our middleware and handler, the answer rendered to wire JSON; no
   HTTP, no client-side parsing): the first after a build, and repeats (answered from the cached
   answer until the catalog changes).
2. ``search_tools`` p50 via the call router (as workload 8) at 1,000 / 10,000 / 100,000 generated
   tools plus the examples; registering them in apcore's ``Registry``, building the bridge and
   indexing are timed beside it.
3. Memory per idle handshake-era session: ``python -m apcore_mcp`` over Streamable HTTP, sessions
   opened with raw httpx (``initialize`` + ``notifications/initialized``, never closed) up to
   1,000 and then 10,000; (server RSS at each count - RSS before) / count.
4. 1,000 concurrent 2026-07-28 clients: ``wrk -c 1000`` (workload 14's request, reply checks and
   figures) against ours with its call limits sized for them, then against the CLI's defaults,
   whose refusals show what those limits do to so many clients from one address.

Sizes follow the run's (``plan``): the full run gives the sizes above, ``--quick`` a tenth of the
build and session sizes and one search size less, the smoke test tiny ones.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import math
import resource
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import anyio
import httpx
from apcore import Executor, Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from bench.capacity import measure_once
from bench.capacity_servers import check_reply, load_for, rss_mib, serving
from bench.catalogs import GeneratedTool, generated
from bench.common import ServerSpec, median, open_handshake_session, percentile, server_specs
from bench.inproc import tools_list_times
from bench.rows import OURS, Config, row
from bench.upstream import EXAMPLES, search_times
from bench.wrk import run_wrk

WORKLOAD = "15 scale"
CLIENTS = 1000
LIST_REPEATS = 5
SESSION_VERSION = "2025-11-25"
WARM_SESSIONS = 20  # opened before the baseline: the first sessions pay for lazily built state
SETTLE_S = 1.0  # after the last session opened, before RSS is read
SESSION_BUDGET_S = 300.0
REGISTER_BUDGET_S = 900.0  # apcore's Registry.register copies its id set on every call: 100,000 take minutes
WARMUP_SECONDS = 1


@dataclass(frozen=True)
class Plan:
    """The sizes of one run's series."""

    build: tuple[int, ...]
    search: tuple[int, ...]
    sessions: tuple[int, ...]
    clients: int
    seconds: int
    reps: int


def plan(cfg: Config) -> Plan:
    """Sizes from the run's own, so ``--quick`` and the smoke test need no options of their own.

    The full run's ``sizes`` (100, 1,000) and ``search_sizes`` (1,000, 10,000) each get ten times
    their largest added; sessions are the largest size and ten times it; wrk's connections 1,000
    (fewer only when ten times the largest size is below it, i.e. in the smoke test).
    """
    big = max(cfg.sizes)
    return Plan(
        build=tuple(sorted({*cfg.sizes, 10 * big})),
        search=tuple(sorted({*cfg.search_sizes, 10 * max(cfg.search_sizes)})),
        sessions=(big, 10 * big),
        clients=min(CLIENTS, 10 * big),
        seconds=max(1, cfg.capacity_seconds),
        reps=max(1, cfg.reps),
    )


def scale(cfg: Config) -> list[dict[str, Any]]:
    p = plan(cfg)
    return [*build_rows(p), *search_rows(p, cfg.search_calls), *session_rows(cfg, p), *client_rows(cfg, p)]


# -- growth ---------------------------------------------------------------------------------------------


def exponent(sizes: Sequence[int], values: Sequence[float | None]) -> list[tuple[int, int, float]]:
    """(from size, to size, k in value ~ size^k): the two ends first, then each step between sizes.

    Only sizes with a positive value count; empty with fewer than two.
    """
    points = [(n, v) for n, v in zip(sizes, values, strict=True) if v is not None and v > 0]
    pairs = [(points[0], points[-1]), *pairwise(points)] if len(points) > 1 else []
    return [(n0, n1, math.log(v1 / v0) / math.log(n1 / n0)) for (n0, v0), (n1, v1) in pairs]


def shape(k: float | None) -> str:
    if k is None:
        return "not measured"
    if k < 0.9:
        return "sublinear"
    if k <= 1.1:
        return "linear"
    return "superlinear" if k < 1.8 else "quadratic or worse"


def growth_row(what: str, cost: str, sizes: Sequence[int], values: Sequence[float | None]) -> dict[str, Any]:
    """k from the series' ends; with three sizes the last step's k too (a step can bend the curve)."""
    found = exponent(sizes, values)
    lo, hi, k = found[0] if found else (sizes[0], sizes[-1], None)
    last = f"; last step {found[-1][2]:.2f}" if len(found) > 2 else ""
    return row(
        WORKLOAD,
        f"growth of {what}, {lo:,} -> {hi:,}: {cost} ~ size^k ({shape(k)}{last})",
        "exponent",
        k,
        details={
            "sizes": list(sizes),
            "values": list(values),
            "shape": shape(k),
            "steps": [{"from": a, "to": b, "k": step} for a, b, step in found[1:]],
        },
    )


# -- generated catalogs -----------------------------------------------------------------------------------


def register_fast(registry: Registry, n: int, *, budget_s: float = REGISTER_BUDGET_S) -> float:
    """Register ``bench.catalogs``' generated tools 0..n-1; the seconds it took.

    The same ids, descriptions and schemas as ``register_generated``, but the tools of one schema
    (400 distinct) share its compiled contract: ``JsonSchemaModel`` checks its schema against the
    metaschema when made (~1 ms), which would cost more than anything measured here.

    Raises:
        TimeoutError: registering took longer than ``budget_s``.
    """
    started = time.monotonic()
    prototypes: dict[str, GeneratedTool] = {}
    for i in range(n):
        module_id, description, schema = generated(i)
        key = module_id.rsplit("_", 1)[0]  # verb and object: what the schema is made of
        prototype = prototypes.get(key)
        if prototype is None:
            tool = prototypes[key] = GeneratedTool(description, schema)
        else:
            tool = copy.copy(prototype)
            tool.description, tool.tags = description, list(prototype.tags)
        registry.register(module_id, tool)
        if i % 1000 == 999 and time.monotonic() - started > budget_s:
            raise TimeoutError(f"registered {i + 1:,} of {n:,} tools in {budget_s:.0f} s")
    return time.monotonic() - started


# -- 1. catalog build and tools/list ------------------------------------------------------------------


async def list_times(bridge: Bridge, repeats: int) -> dict[str, Any]:
    """``tools/list`` server time (``bench.inproc.tools_list_times``): the first answer, then ``repeats`` more."""
    times, size, tools = await tools_list_times(bridge.server, repeats + 1)
    return {"first_ms": times[0], "repeat_ms": times[1:], "tools": tools, "bytes": size}


def build_rows(p: Plan) -> list[dict[str, Any]]:
    """Catalog build and tools/list per size; a fresh bridge (and so a cold tools/list) each rep."""
    series: dict[int, dict[str, Any]] = {}
    for n in p.build:
        registry = Registry()
        register_s = register_fast(registry, n)
        executor = Executor(registry)
        builds, firsts, repeats = [], [], []
        listed: dict[str, Any] = {}
        for _ in range(p.reps):
            gc.collect()
            started = time.perf_counter()
            bridge = Bridge.build(executor, Settings())
            builds.append((time.perf_counter() - started) * 1000)
            listed = anyio.run(list_times, bridge, LIST_REPEATS)
            firsts.append(listed["first_ms"])
            repeats += listed["repeat_ms"]
            if listed["tools"] != n:
                raise RuntimeError(f"tools/list listed {listed['tools']} tools of {n}")
        series[n] = {
            "build_min_ms": min(builds),
            "build_median_ms": median(builds),
            "list_first_min_ms": min(firsts),
            "list_repeat_median_ms": median(repeats),
            "list_bytes": listed["bytes"],
            "register_s": register_s,
            "reps": p.reps,
        }
        del registry, executor
        gc.collect()
    details = {"per_size": series, "tools_list": "server time over in-memory streams, no HTTP, no client parsing"}
    rows = []
    for key, name, what in (
        ("build_min_ms", "catalog build", f"catalog build, Bridge.build(executor, Settings()) (best of {p.reps})"),
        ("list_first_min_ms", "the first tools/list", f"first tools/list after a build, in memory (best of {p.reps})"),
        ("list_repeat_median_ms", "a repeated tools/list", "tools/list again, from the cached answer (median)"),
    ):
        rows += [row(WORKLOAD, f"{what}, {n:,} modules", "ms", series[n][key], details=details) for n in p.build]
        rows.append(growth_row(name, "time", p.build, [series[n][key] for n in p.build]))
    return rows


# -- 2. search_tools ---------------------------------------------------------------------------------------


def search_rows(p: Plan, calls: int) -> list[dict[str, Any]]:
    """search_tools p50 per size; the registry, bridge and index are built per size and dropped."""
    series: dict[int, dict[str, Any]] = {}
    for n in p.search:
        registry = Registry(extensions_dir=str(EXAMPLES))
        registry.discover()
        try:
            register_s = register_fast(registry, n)
        except TimeoutError as exc:
            series[n] = {"error": str(exc)}
            continue
        started = time.perf_counter()
        bridge = Bridge.build(Executor(registry), Settings(tool_mode="search"))
        build_ms = (time.perf_counter() - started) * 1000
        assert bridge.search is not None
        started = time.perf_counter()
        bridge.search.index()
        index_ms = (time.perf_counter() - started) * 1000
        times = anyio.run(search_times, bridge, calls)
        series[n] = {
            "p50_ms": median(times),
            "p99_ms": percentile(times, 99),
            "queries": len(times),
            "register_s": register_s,
            "bridge_build_ms": build_ms,
            "index_ms": index_ms,
            "tools": len(registry.list()),
        }
        del registry, bridge
        gc.collect()
    details = {"per_size": series}
    rows = [
        row(
            WORKLOAD,
            f"search_tools via the call router, {n:,} tools + examples ({calls} queries, p50)",
            "ms",
            series[n].get("p50_ms"),
            details=details,
        )
        for n in p.search
    ]
    rows.append(growth_row("search_tools p50", "time", p.search, [series[n].get("p50_ms") for n in p.search]))
    rows.append(growth_row("the search index build", "time", p.search, [series[n].get("index_ms") for n in p.search]))
    rows.append(
        row(
            WORKLOAD,
            f"register {max(p.search):,} generated tools in apcore's Registry (the search rows' fixture)",
            "s",
            series[max(p.search)].get("register_s"),
            details=details,
        )
    )
    rows.append(
        growth_row(
            "apcore Registry.register of n tools", "time", p.search, [series[n].get("register_s") for n in p.search]
        )
    )
    return rows


# -- 3. memory per idle session ----------------------------------------------------------------------------


def session_rows(cfg: Config, p: Plan) -> list[dict[str, Any]]:
    """RSS per idle handshake-era session at each count, on one server, sessions never closed."""
    cap = max(p.sessions) + WARM_SESSIONS + 10
    ours = server_specs(cfg.extensions(cfg.small), include_reference=False)[0]
    spec = ServerSpec(
        OURS,
        ours.python,
        [
            *ours.args,
            *("--max-sessions", str(cap), "--max-sessions-per-caller", str(cap)),
            *("--session-idle-timeout", "3600"),  # idle on purpose: none may be reaped during the run
        ],
    )
    result: dict[str, Any] = {"per_size": {}, "server_args": spec.args[-6:]}
    with _nofile(cap + 200), serving(spec, log=cfg.log) as (pid, port):
        check_reply(port)  # up and answering before anything is read
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            result.update(open_sessions(http, pid, p.sessions))
    per_session = [result["per_size"].get(n, {}).get("kib_per_session") for n in p.sessions]
    rows = [
        row(
            WORKLOAD,
            f"server RSS per idle handshake-era session ((after - before) / n), {n:,} sessions",
            "KiB",
            value,
            details=result,
        )
        for n, value in zip(p.sessions, per_session, strict=True)
    ]
    grown = [v * n if v is not None else None for n, v in zip(p.sessions, per_session, strict=True)]
    rows.append(growth_row("server RSS over idle sessions", "memory", p.sessions, grown))
    return rows


def open_sessions(http: httpx.Client, pid: int, counts: Sequence[int]) -> dict[str, Any]:
    """Open sessions up to each count in turn, never closing one; server RSS at each count.

    Bounded by ``SESSION_BUDGET_S``; a refused session (a session cap) ends the series early.
    """
    for _ in range(WARM_SESSIONS):
        open_handshake_session(http, SESSION_VERSION)
    time.sleep(SETTLE_S)
    before = rss_mib(pid)
    result: dict[str, Any] = {"rss_before_mib": before, "per_size": {}}
    deadline = time.monotonic() + SESSION_BUDGET_S
    opened: list[dict[str, str]] = []
    open_s = 0.0  # time spent opening sessions, the settling pauses left out
    try:
        for target in counts:
            started = time.monotonic()
            while len(opened) < target and time.monotonic() < deadline:
                opened.append(open_handshake_session(http, SESSION_VERSION))
            open_s += time.monotonic() - started
            if len(opened) < target:
                result["error"] = f"opened {len(opened):,} sessions in {SESSION_BUDGET_S:.0f} s"
                break
            time.sleep(SETTLE_S)
            after = rss_mib(pid)
            result["per_size"][target] = {
                "rss_after_mib": after,
                "kib_per_session": (after - before) * 1024 / target if after and before else None,
                "open_ms_per_session": open_s * 1000 / target,
            }
    except httpx.HTTPStatusError as exc:
        result["error"] = f"refused after {len(opened):,} sessions: HTTP {exc.response.status_code}"
    # Still held, all of them: the first and the last session answer a ping.
    result["alive"] = [_ping(http, headers) for headers in opened[:1] + opened[-1:]]
    return result


def _ping(http: httpx.Client, headers: dict[str, str]) -> int:
    """HTTP status of a ping on a session: 200 while the server holds it, 404 once it is gone."""
    return http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers).status_code


@contextlib.contextmanager
def _nofile(needed: int) -> Iterator[None]:
    """Raise this process's open-file limit (inherited by the servers and wrk it starts) for a while."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, needed) if hard != resource.RLIM_INFINITY else needed
    if wanted > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        if wanted > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- 4. 1,000 concurrent 2026-07-28 clients ----------------------------------------------------------------


def client_rows(cfg: Config, p: Plan) -> list[dict[str, Any]]:
    """wrk with ``clients`` keep-alive connections: ours sized for them, then the CLI's defaults.

    On loopback every connection is the same caller, so the sized server also lifts the
    per-caller share of the call limit (``--max-caller-share 1``); the defaults (500 calls at
    once, a caller half of them) are measured as they ship. Each server first takes a 1 s wrk run
    (its first second: every connection opened at once on a cold process), kept in the details,
    then the measured one.
    """
    ours = server_specs(cfg.extensions(cfg.small), include_reference=False)[0]
    sized = ServerSpec(
        OURS, ours.python, [*ours.args, "--max-concurrent-calls", str(p.clients), "--max-caller-share", "1"]
    )
    runs: dict[str, dict[str, Any]] = {}
    with _nofile(p.clients + 200):
        for name, spec in (("sized", sized), ("defaults", ours)):
            try:
                with serving(spec, log=cfg.log) as (pid, port):
                    check_reply(port)
                    first = run_wrk(load_for(port), connections=p.clients, seconds=WARMUP_SECONDS)
                    runs[name] = {**measure_once(pid, port, p.clients, p.seconds), "first_second": _summary(first)}
            except Exception as exc:
                runs[name] = {"error": f"{type(exc).__name__}: {str(exc)[-500:]}"}
    run, default = runs["sized"], runs["defaults"]
    label = f"{p.clients:,} concurrent 2026-07-28 clients, wrk {p.seconds} s"
    details = {**runs, "sized_args": sized.args[-4:]}
    errors = run.get("errors")
    refused = None
    if "calls" in default:
        answered = default["calls"] + default["error_kinds"]["bad_replies"] + default["error_kinds"]["non2xx"]
        refused = 100 * (answered - default["calls"]) / answered if answered else None
    cold = default.get("first_second", {}).get("not_correct_pct")
    return [
        row(WORKLOAD, f"{label}: correct calls/s", "calls/s", run.get("calls_per_s"), details=details),
        row(WORKLOAD, f"{label}: p99 latency (p50 in details)", "ms", run.get("p99_ms"), details=details),
        row(
            WORKLOAD,
            f"{label}: errors (non-2xx, socket errors, bad replies)",
            "count",
            errors,
            target="0",
            met=errors == 0,
            details=details,
        ),
        row(WORKLOAD, f"{label}, CLI default call limits: replies refused busy", "%", refused, details=details),
        row(WORKLOAD, "the same, the cold server's first second", "%", cold, details=details),
    ]


def _summary(wrk: dict[str, Any]) -> dict[str, Any]:
    """A wrk run's counts: replies, the share not a correct result, socket errors, p99."""
    replies = wrk["replies"]
    wrong = wrk["non200"] + wrk["bad"]
    return {
        "replies": replies,
        "not_correct": wrong,
        "not_correct_pct": 100 * wrong / replies if replies else None,
        "socket_errors": sum(wrk[k] for k in ("connect", "read", "write", "timeout")),
        "p99_ms": wrk["p99_us"] / 1000,
    }
