"""Workload 12 (replicas): several replicas behind nginx, and what shared state in Redis costs per call.

- Calls/s of 2026-07-28 clients (the era without sessions, so round-robin needs nothing else)
  to one replica directly, through nginx (``deploy/nginx-replicas.conf``) with one replica, and
  through nginx with two; the same load processes as workload 5, in interleaved rounds. All
  three share this machine's cores with the load generators and nginx: read the ratios.
- The per-call cost of the Redis-backed rate limit: ``RedisBuckets.take`` against a local
  ``redis-server`` (one Lua script round trip) beside the in-process bucket, median per take.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from apcore_mcp.calls.limits import BucketStore, MemoryBuckets
from apcore_mcp.replicas.buckets import RedisBuckets
from apcore_mcp.replicas.link import RedisLink
from bench.common import REPO_ROOT, ServerSpec, free_port, median, running_server, stop_process, wait_port
from bench.rows import Config, row
from bench.throughput import run_load_at

NGINX_CONF = REPO_ROOT / "deploy" / "nginx-replicas.conf"
UPSTREAMS = ("apcore-mcp-1:8000", "apcore-mcp-2:8000")
DIRECT, ONE, TWO = "1 replica, direct", "1 replica via nginx", "2 replicas via nginx"


def replica_spec(extensions: Path, key: str) -> ServerSpec:
    args = ["-m", "apcore_mcp", "--extensions-dir", str(extensions), "--log-level", "WARNING"]
    return ServerSpec("ours", sys.executable, [*args, "--request-state-keys", key])


def nginx_conf(listen: int, addresses: Sequence[str]) -> str:
    """deploy/nginx-replicas.conf on 127.0.0.1:``listen`` in front of ``addresses`` (1 or 2)."""
    lines = []
    for line in NGINX_CONF.read_text().replace("listen 80;", f"listen 127.0.0.1:{listen};").splitlines():
        for index, name in enumerate(UPSTREAMS):
            if name in line:
                line = line.replace(name, addresses[index]) if index < len(addresses) else ""
        lines.append(line)
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def nginx(addresses: Sequence[str], workdir: Path) -> Iterator[int]:
    """nginx in the foreground on a free port; yields the port; stopped by PID."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    prefix = Path(tempfile.mkdtemp(prefix="nginx-", dir=workdir))
    (prefix / "nginx.conf").write_text(
        nginx_conf(port, addresses).replace("access_log /dev/stdout mcp;", "access_log off;")
    )
    cmd = [binary, "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf"), "-g", f"daemon off; pid {prefix}/nginx.pid;"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_port(port, proc, timeout=10)
        yield port
    finally:
        stop_process(proc)


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A throwaway ``redis-server`` on a free loopback port (nothing saved); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    cmd = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_port(port, proc, timeout=10)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_process(proc)


def throughput(cfg: Config, clients: int) -> dict[str, dict[str, Any]]:
    """Median load results per layout over ``cfg.throughput_rounds`` interleaved rounds."""
    spec = replica_spec(cfg.extensions(cfg.small), secrets.token_hex(32))
    runs: dict[str, list[dict[str, Any]]] = {DIRECT: [], ONE: [], TWO: []}
    with (
        running_server(spec, "streamable-http", log=cfg.log) as (pid_a, port_a),
        running_server(spec, "streamable-http", log=cfg.log) as (pid_b, port_b),
    ):
        a, b = f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"
        with nginx([a], cfg.workdir) as one, nginx([a, b], cfg.workdir) as two:
            targets = {
                DIRECT: ([pid_a], f"http://{a}"),
                ONE: ([pid_a], f"http://127.0.0.1:{one}"),
                TWO: ([pid_a, pid_b], f"http://127.0.0.1:{two}"),
            }
            names = list(targets)
            for round_ in range(cfg.throughput_rounds):
                shift = round_ % len(names)
                for name in names[shift:] + names[:shift]:
                    pids, url = targets[name]
                    runs[name].append(run_load_at(cfg, pids, url, "streamable-http", clients, era="modern"))
    return {name: _median(results) for name, results in runs.items()}


def _median(results: list[dict[str, Any]]) -> dict[str, Any]:
    good = [r for r in results if "failed" not in r]
    if not good:
        return results[-1]
    merged = dict(good[len(good) // 2])
    for key in ("calls_per_s", "server_cpu_ms_per_call", "p50_ms", "p99_ms"):
        values = [r[key] for r in good if isinstance(r.get(key), int | float)]
        merged[key] = statistics.median(values) if values else None
    for key in ("errors", "lost", "misrouted", "connect_failures", "load_process_failures"):
        merged[key] = sum(r.get(key, 0) for r in good)
    merged["calls_per_s_by_round"] = [r.get("calls_per_s") for r in good]
    return merged


async def bucket_times(url: str, takes: int) -> dict[str, float]:
    """Median ms per take: Redis-backed (loopback) and in-process; spread over 50 callers."""
    link = RedisLink(url, "bench:")
    stores: dict[str, BucketStore] = {"redis": RedisBuckets(link), "in-process": MemoryBuckets()}
    figures: dict[str, float] = {}
    try:
        for name, store in stores.items():
            await store.take("warm", 1e6, 10**6, time.monotonic())
            times = []
            for i in range(takes):
                started = time.perf_counter()
                await store.take(f"caller-{i % 50}", 1e6, 10**6, time.monotonic())
                times.append((time.perf_counter() - started) * 1000)
            figures[name] = median(times)
        figures["redis_failures"] = float(link.problem() is not None)
    finally:
        await link.aclose()
    return figures


def replicas(cfg: Config) -> list[dict[str, Any]]:
    # 10 clients at most: 50 2026-07-28 clients connecting at once take longer than a whole
    # measuring window on 2 shared cores (each connection starts with a discovery round trip).
    clients = min(max(cfg.client_counts), 10)
    results = throughput(cfg, clients)
    with redis_server(cfg.workdir) as url:
        buckets = asyncio.run(bucket_times(url, max(cfg.calls, 200)))
    two, others = results[TWO], {name: results[name] for name in (ONE, DIRECT)}
    label = f"2026-07-28, {clients} client{'s' if clients > 1 else ''}"
    faults = {name: _faults(result) for name, result in results.items()}
    return [
        row("12 replicas", f"calls/s, {TWO}, {label}", "calls/s", two.get("calls_per_s"),
            {name: r.get("calls_per_s") for name, r in others.items()}, details=results),
        row("12 replicas", f"server CPU per call (all replicas), {label}", "ms", two.get("server_cpu_ms_per_call"),
            {name: r.get("server_cpu_ms_per_call") for name, r in others.items()}),
        row("12 replicas", f"p50 latency, {TWO}, {label}", "ms", two.get("p50_ms"),
            {name: r.get("p50_ms") for name, r in others.items()}),
        row("12 replicas", f"errors / lost / misrouted, every layout, {label}", "count", float(sum(faults.values())),
            target="0", met=sum(faults.values()) == 0, details=faults),
        row("12 replicas", "rate-limit take, Redis bucket on loopback (median)", "ms", buckets["redis"],
            {"in-process bucket": buckets["in-process"]}, details=buckets),
        row("12 replicas", "Redis rate limit per call beyond an in-process bucket", "ms",
            buckets["redis"] - buckets["in-process"]),
    ]  # fmt: skip


def _faults(result: dict[str, Any]) -> int:
    if "failed" in result:
        return 1
    return int(sum(result.get(key, 0) for key in ("errors", "lost", "misrouted", "connect_failures")))


__all__ = ["replicas"]
