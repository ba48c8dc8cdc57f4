"""Workload 13, memory under a soak: does the server's RSS keep growing while clients come and go?

Two servers run side by side on the same extensions dir: ours as started by default (resumable
streams keep recent events) and ours with ``--no-resumable`` (nothing kept). The same client
loop drives both at once: handshake-era sessions, each making a few ``bench.echo`` calls with a
100 KB argument (so a 100 KB result on its stream) and then closed with ``DELETE``; one in ten
is abandoned instead (no ``DELETE``), as clients that die do, and reaped after
``--session-idle-timeout`` (30 s here, so the soak sees reaping too). RSS is sampled from
``/proc/<pid>/status`` every few seconds; the figure is the least-squares slope in MiB per minute
after a warm-up, plus the peak RSS. Goal (issue 15): flat, i.e. within noise of ``--no-resumable``,
and at most 64 MiB above it (the store keeps 48 MiB of events).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import ServerSpec, open_handshake_session, running_server
from bench.modules import ECHO_ID
from bench.rows import OURS, Config, row

HANDSHAKE = "2025-11-25"
PAYLOAD = "x" * 100_000
CALLS_PER_SESSION = 3
SAMPLE_SECONDS = 3.0
WARMUP_FRACTION = 0.25
NO_RESUME = "no-resumable"
IDLE_SECONDS = 30


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(seconds, MiB)`` samples, in MiB per minute."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    cov = sum((t - mean_t) * (m - mean_m) for t, m in samples)
    return cov / var * 60 if var else 0.0


def one_session(http: httpx.Client, serial: int) -> int:
    """Open a session, make a few large calls, close it (or abandon every tenth); the calls answered."""
    headers = open_handshake_session(http, HANDSHAKE, "soak")
    answered = 0
    for call in range(CALLS_PER_SESSION):
        arguments = {"name": ECHO_ID, "arguments": {"text": PAYLOAD}}
        body = {"jsonrpc": "2.0", "id": call + 1, "method": "tools/call", "params": arguments}
        answered += PAYLOAD in http.post("/mcp", json=body, headers=headers).text
    if serial % 10:
        http.delete("/mcp", headers=headers)
    return answered


def drive(port: int, seconds: float, counts: dict[str, int], name: str) -> None:
    """The client loop for one server, bounded by ``seconds``; a refused or failed session is counted."""
    deadline = time.monotonic() + seconds
    serial = 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        while time.monotonic() < deadline:
            serial += 1
            try:
                counts[name] += one_session(http, serial)
            except httpx.HTTPError:
                counts[f"{name} failures"] += 1
                time.sleep(0.1)  # a refused session: do not spin


def soak(cfg: Config) -> list[dict[str, Any]]:
    # 3 minutes in a full run, 1 in a quick one; the smoke test asks for a few samples only.
    seconds = cfg.soak_seconds or max(60.0, cfg.duration * 36)
    extensions = str(cfg.extensions(cfg.small))
    common = ["-m", "apcore_mcp", "--extensions-dir", extensions, "--log-level", "WARNING"]
    # Abandoned sessions live until reaped: the per-caller cap (one client here) must hold them.
    common += ["--session-idle-timeout", str(IDLE_SECONDS), "--max-sessions-per-caller", "1000"]
    specs = {
        OURS: ServerSpec(OURS, sys.executable, common),
        NO_RESUME: ServerSpec(NO_RESUME, sys.executable, [*common, "--no-resumable"]),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in specs}
    counts = dict.fromkeys([*specs, *(f"{name} failures" for name in specs)], 0)
    with (
        running_server(specs[OURS], "streamable-http", log=cfg.log) as (ours_pid, ours_port),
        running_server(specs[NO_RESUME], "streamable-http", log=cfg.log) as (base_pid, base_port),
    ):
        pids = {OURS: ours_pid, NO_RESUME: base_pid}
        drivers = [
            threading.Thread(target=drive, args=(port, seconds, counts, name))
            for name, port in ((OURS, ours_port), (NO_RESUME, base_port))
        ]
        started = time.monotonic()
        for driver in drivers:
            driver.start()
        while any(driver.is_alive() for driver in drivers):
            elapsed = time.monotonic() - started
            for name, pid in pids.items():
                samples[name].append((elapsed, rss_mib(pid)))
            time.sleep(SAMPLE_SECONDS)
        for driver in drivers:
            driver.join()
    settled = {name: [s for s in points if s[0] >= seconds * WARMUP_FRACTION] for name, points in samples.items()}
    slopes = {name: slope_per_minute(points) for name, points in settled.items()}
    peaks = {name: max(m for _, m in points) for name, points in samples.items()}
    details = {"seconds": seconds, "calls_answered": counts, "samples": samples}
    return [
        row(
            "13 soak",
            f"RSS slope after warm-up, {seconds:.0f} s of sessions with 100 KB results",
            "MiB/min",
            slopes[OURS],
            {NO_RESUME: slopes[NO_RESUME]},
            target="flat (<= 0.5 MiB/min)",
            met=slopes[OURS] <= 0.5,
            details=details,
        ),
        row(
            "13 soak",
            "peak RSS during the soak",
            "MiB",
            peaks[OURS],
            {NO_RESUME: peaks[NO_RESUME]},
            target="<= --no-resumable + 64 MiB",
            met=peaks[OURS] <= peaks[NO_RESUME] + 64,
        ),
        row(
            "13 soak",
            f"calls answered (sessions refused or failed: {counts[OURS + ' failures']})",
            "calls",
            counts[OURS],
            {NO_RESUME: counts[NO_RESUME]},
            target="no session refused or failed",
            met=counts[f"{OURS} failures"] == 0,
        ),
    ]
