"""``wrk``, the compiled load generator of the capacity workload: install it, run it, read its counts.

One wrk thread: on this 2-core machine one core is the server's (a single Python process) and
the other the generator's; the generator's own CPU is measured (``os.wait4``) so a run shows
whether wrk, not the server, was what saturated.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

LUA_SCRIPT = Path(__file__).resolve().parent / "capacity.lua"
RESULT_PREFIX = "WRK-RESULT "
THREADS = 1


def ensure_wrk() -> str:
    """The path of ``wrk``; installed from Debian (``apt-get install wrk``) when missing and root.

    Raises:
        RuntimeError: wrk is missing and cannot be installed here.
    """
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "wrk"],
            check=True,
            env=env,
            timeout=600,
            capture_output=True,
        )
        found = shutil.which("wrk")
        if found:
            return found
    raise RuntimeError("wrk is not installed: apt-get install wrk (the capacity workload's load generator)")


@dataclass(frozen=True)
class Load:
    """What wrk sends: one request, repeated, and the string every correct reply contains."""

    url: str
    tool: str
    body: str
    expect: str


def run_wrk(load: Load, *, connections: int, seconds: int, timeout_s: int = 10) -> dict[str, Any]:
    """``wrk`` against ``load.url`` for ``seconds``; its counts, latency percentiles and own CPU.

    Raises:
        RuntimeError: wrk failed or printed no result line.
    """
    cmd = [
        ensure_wrk(),
        f"-t{min(THREADS, connections)}",
        f"-c{connections}",
        f"-d{seconds}s",
        f"--timeout={timeout_s}s",
        "-s",
        str(LUA_SCRIPT),
        load.url,
        "--",
        load.tool,
        load.body,
        load.expect,
    ]
    with tempfile.TemporaryFile() as out:
        code, cpu = _run_timed(cmd, out, deadline_s=seconds + timeout_s + 30)
        out.seek(0)
        text = out.read().decode(errors="replace")
    lines = [line for line in text.splitlines() if line.startswith(RESULT_PREFIX)]
    if code != 0 or not lines:
        raise RuntimeError(f"wrk exited {code} without a result: {text[-1500:]}")
    result: dict[str, Any] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    result["wrk_cpu_s"] = cpu
    return result


def _run_timed(cmd: list[str], out: IO[bytes], *, deadline_s: float) -> tuple[int, float]:
    """Run ``cmd`` (own process group) to its end; its exit code and CPU seconds (user + system)."""
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + deadline_s
    try:
        while True:
            # wait4, not Popen.wait: it also returns the child's resource usage.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime
