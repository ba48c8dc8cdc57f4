"""Workload 5: calls/s, latency, CPU and faults over Streamable HTTP and SSE, several client processes."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.common import (
    REPO_ROOT,
    cpu_seconds,
    percentile,
    running_server,
    stop_process,
)
from bench.rows import BARE, BARE_DIRECT, OURS, REF, Config, row

# -- 5. throughput -----------------------------------------------------------------------------------------


def load_layout(clients: int) -> list[int]:
    """Clients per load process: several processes so one Python client loop is not the bottleneck."""
    procs = 1 if clients == 1 else min(clients, 2 if clients <= 10 else 5)
    base, extra = divmod(clients, procs)
    return [base + (1 if i < extra else 0) for i in range(procs)]


def run_load(cfg: Config, pid: int, port: int, transport: str, clients: int) -> dict[str, Any]:
    """N load processes against one running server for ``cfg.duration`` seconds; merged results."""
    return run_load_at(cfg, [pid], f"http://127.0.0.1:{port}", transport, clients)


def run_load_at(
    cfg: Config, pids: Sequence[int], url: str, transport: str, clients: int, *, era: str = "legacy"
) -> dict[str, Any]:
    """N load processes against ``url`` for ``cfg.duration`` seconds; server CPU is the sum over ``pids``."""
    layout = load_layout(clients)
    grace = 2.5 + 0.04 * clients
    start_at = time.time() + grace
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.load",
                "--url",
                url,
                "--transport",
                "sse" if transport == "sse" else "http",
                "--era",
                era,
                "--clients",
                str(k),
                "--start-at",
                str(start_at),
                "--duration",
                str(cfg.duration),
                "--proc",
                str(i),
                "--call-timeout",
                str(cfg.call_timeout),
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        for i, k in enumerate(layout)
    ]
    outs: list[dict[str, Any]] = []
    try:
        time.sleep(max(0.0, start_at - time.time()))
        cpu0 = sum(cpu_seconds(pid) for pid in pids)
        time.sleep(max(0.0, start_at + cfg.duration - time.time()))
        cpu1 = sum(cpu_seconds(pid) for pid in pids)
        deadline = time.monotonic() + cfg.call_timeout + 30
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                outs.append(json.loads(out.decode().strip().splitlines()[-1]))
            except Exception as exc:
                outs.append({"failed": f"{type(exc).__name__}: {exc}"})
    finally:
        for proc in procs:
            stop_process(proc, timeout=5)
    good = [o for o in outs if "failed" not in o]
    latencies = [x for o in good for x in o["latencies_ms"]]
    ok = sum(o["ok"] for o in good)
    kinds: dict[str, int] = {}
    for o in good:
        for k, v in o["error_kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    client_cpu = sum(o["cpu_seconds"] or 0 for o in good)
    return {
        "clients": clients,
        "load_processes": len(procs),
        "calls_per_s": ok / cfg.duration,
        "ok": ok,
        "p50_ms": percentile(latencies, 50) if latencies else None,
        "p99_ms": percentile(latencies, 99) if latencies else None,
        "errors": sum(o["errors"] for o in good),
        "lost": sum(o["lost"] for o in good),
        "misrouted": sum(o["misrouted"] for o in good),
        "connect_failures": sum(o["connect_failures"] for o in good),
        "load_process_failures": len(outs) - len(good),
        "error_kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:5]),
        "server_cpu_s": cpu1 - cpu0,
        "server_cpu_ms_per_call": (cpu1 - cpu0) / ok * 1000 if ok else None,
        "client_cpu_s": client_cpu,
        "client_cpu_util": client_cpu / cfg.duration,
        "duration_s": cfg.duration,
    }


def median_load(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One load result from several rounds: medians of the rates, sums of the failures."""
    good = [run for run in runs if "failed" not in run]
    if not good:
        return runs[-1]
    merged: dict[str, Any] = dict(good[len(good) // 2])
    for key, value in good[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers = sorted(run[key] for run in good if isinstance(run.get(key), (int, float)))
            merged[key] = statistics.median(numbers)
    for key in ("errors", "lost", "misrouted", "connect_failures", "load_process_failures"):
        if key in good[0]:
            merged[key] = sum(run.get(key, 0) for run in good)
    merged["rounds"] = len(good)
    merged["calls_per_s_by_round"] = [run.get("calls_per_s") for run in good]
    return merged


def throughput(cfg: Config) -> list[dict[str, Any]]:
    # This machine is shared and noisy: one run per server swings ratios by +-40%. Servers are
    # measured in interleaved rounds (the order rotates each round) and each figure is the
    # median over rounds, so a slow spell hits every server alike.
    samples: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    specs = cfg.specs()
    for transport in cfg.transports:
        for round_ in range(cfg.throughput_rounds):
            shift = round_ % len(specs)
            for spec in specs[shift:] + specs[:shift]:
                try:
                    with running_server(spec, transport, log=cfg.log) as (pid, port):
                        for clients in cfg.client_counts:
                            load = run_load(cfg, pid, port, transport, clients)
                            samples.setdefault((transport, spec.name, clients), []).append(load)
                except Exception as exc:
                    for clients in cfg.client_counts:
                        failure = {"failed": f"{type(exc).__name__}: {exc}"}
                        samples.setdefault((transport, spec.name, clients), []).append(failure)
    results = {key: median_load(runs) for key, runs in samples.items()}
    rows = []
    for transport in cfg.transports:
        for clients in cfg.client_counts:
            mine = results.get((transport, OURS, clients), {})
            others = {name: results.get((transport, name, clients), {}) for name in (BARE, BARE_DIRECT, REF)}
            others = {k: v for k, v in others.items() if v}
            target = met = None
            clean = mine.get("lost") == 0 and mine.get("misrouted") == 0 and mine.get("errors") == 0
            if transport == "streamable-http" and clients >= 10 and BARE in others:
                target = ">= 0.9x bare+executor, 0 lost/misrouted"
                bare_rate = others[BARE].get("calls_per_s")
                met = bool(bare_rate) and mine.get("calls_per_s", 0) >= 0.9 * bare_rate and clean
            label = f"{transport}, {clients} client{'s' if clients > 1 else ''}"
            rows.append(
                row(
                    "5 throughput",
                    f"calls/s, {label}",
                    "calls/s",
                    mine.get("calls_per_s"),
                    {k: v.get("calls_per_s") for k, v in others.items()},
                    target=target,
                    met=met,
                    details={OURS: mine, **others},
                )
            )
            rows.append(
                row(
                    "5 throughput",
                    f"server CPU per call, {label}",
                    "ms",
                    mine.get("server_cpu_ms_per_call"),
                    {k: v.get("server_cpu_ms_per_call") for k, v in others.items()},
                )
            )
            for quantile in ("p50", "p99"):
                rows.append(
                    row(
                        "5 throughput",
                        f"{quantile} latency, {label}",
                        "ms",
                        mine.get(f"{quantile}_ms"),
                        {k: v.get(f"{quantile}_ms") for k, v in others.items()},
                    )
                )
            rows.append(
                row(
                    "5 throughput",
                    f"errors / lost / misrouted, {label}",
                    "count",
                    _fault_total(mine),
                    {k: _fault_total(v) for k, v in others.items()},
                    target="0 lost or misrouted",
                    met=mine.get("lost") == 0 and mine.get("misrouted") == 0 if mine else None,
                    details={
                        name: {
                            key: r.get(key)
                            for key in ("errors", "lost", "misrouted", "connect_failures", "error_kinds", "failed")
                        }
                        for name, r in {OURS: mine, **others}.items()
                    },
                )
            )
            rows.append(
                row(
                    "5 throughput",
                    f"load generator CPU (share of one core), {label}",
                    "cores",
                    mine.get("client_cpu_util"),
                    {k: v.get("client_cpu_util") for k, v in others.items()},
                    details={"load_processes": mine.get("load_processes")},
                )
            )
    return rows


def _fault_total(result: dict[str, Any]) -> float | None:
    if not result or "failed" in result:
        return None
    return float(result["errors"] + result["lost"] + result["misrouted"] + result["connect_failures"])


def fault_text(result: dict[str, Any]) -> str:
    if not result:
        return "-"
    if "failed" in result:
        return "server failed"
    return f"{result['errors']}/{result['lost']}/{result['misrouted']}" + (
        f" (+{result['connect_failures']} connect failures)" if result["connect_failures"] else ""
    )
