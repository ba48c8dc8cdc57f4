"""Process, port and machine helpers shared by the workloads."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import pstats
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
REF_VENV = BENCH_DIR / ".ref-venv"
REF_PYTHON = REF_VENV / "bin" / "python"
REF_VERSION = "0.23.3"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM by PID, then SIGKILL by PID if it does not exit in time."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def wait_port(port: int, proc: subprocess.Popen[Any], timeout: float = 60.0) -> None:
    """Return once 127.0.0.1:port accepts connections; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"server not listening on {port} after {timeout}s")


@dataclass
class ServerSpec:
    """How to launch one HTTP/stdio server under test."""

    name: str
    python: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def command(self, transport: str, port: int | None = None) -> list[str]:
        cmd = [self.python, *self.args, "--transport", transport]
        if port is not None:
            cmd += ["--host", "127.0.0.1", "--port", str(port)]
        return cmd


def server_specs(extensions: Path, *, include_reference: bool) -> list[ServerSpec]:
    """Ours (the CLI), the two bare SDK servers, and (optionally) the reference CLI."""
    ext = str(extensions)
    common = ["--extensions-dir", ext, "--log-level", "WARNING"]
    specs = [
        ServerSpec("ours", sys.executable, ["-m", "apcore_mcp", *common]),
        ServerSpec("bare+executor", sys.executable, ["-m", "bench.bare_server", "--mode", "executor", *common]),
        ServerSpec("bare-no-executor", sys.executable, ["-m", "bench.bare_server", "--mode", "direct", *common]),
    ]
    if include_reference:
        specs.append(ServerSpec("reference-0.23.3", str(REF_PYTHON), ["-m", "apcore_mcp", *common]))
    return specs


@contextlib.contextmanager
def running_server(spec: ServerSpec, transport: str, *, log: Path | None = None) -> Iterator[tuple[int, int]]:
    """Start ``spec`` on a free port; yield ``(pid, port)``; stop it by PID."""
    port = free_port()
    stderr: Any = log.open("ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        spec.command(transport, port),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **spec.env},
    )
    try:
        wait_port(port, proc)
        time.sleep(0.3)  # lifespan start-up after the socket is bound
        yield proc.pid, port
    finally:
        stop_process(proc)
        if log:
            stderr.close()


def run_json(cmd: Sequence[str], *, timeout: float, cwd: Path = REPO_ROOT) -> Any:
    """Run a command that prints one JSON document on its last stdout line; return it."""
    proc = subprocess.Popen(
        list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_process(proc, timeout=5)
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}): {err.decode(errors='replace')[-2000:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


def ensure_pinned_venv(venv: Path, distribution: str, version: str, *, timeout: float = 900) -> Path:
    """The python of ``venv``, holding ``distribution==version`` (pip resolves the rest); made if missing
    or holding another version. A reference implementation lives apart from ours, in a venv of its own."""
    python = venv / "bin" / "python"
    if python.exists():
        probe = subprocess.run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.stdout.strip() == version:
            return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{distribution}=={version}"], check=True, timeout=timeout
    )
    return python


def ensure_ref_venv() -> Path:
    """``bench/.ref-venv`` with ``apcore-mcp==0.23.3`` (pip resolves its mcp<2)."""
    return ensure_pinned_venv(REF_VENV, "apcore-mcp", REF_VERSION, timeout=600)


def package_versions(python: str, names: Sequence[str]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    try:
        return dict(run_json([python, "-c", code, *names], timeout=60))
    except Exception:
        return {}


def machine_info() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    names = ["apcore-mcp", "apcore", "mcp", "pydantic", "uvicorn", "starlette"]
    info: dict[str, Any] = {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": {n: _version(n) for n in names},
    }
    if REF_PYTHON.exists():
        info["reference_packages"] = package_versions(str(REF_PYTHON), names)
    return info


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def open_handshake_session(http: Any, version: str, client: str = "bench") -> dict[str, str]:
    """``initialize`` + ``notifications/initialized`` over a raw ``httpx.Client``; the session's headers.

    Raises:
        httpx.HTTPStatusError: the server refused the session (e.g. a session cap).
    """
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": client, "version": "0"}},
    }
    response = http.post("/mcp", json=init, headers=MCP_HEADERS)
    response.raise_for_status()
    headers = {**MCP_HEADERS, "mcp-protocol-version": version}
    session = response.headers.get("mcp-session-id")
    if session:
        headers["mcp-session-id"] = session
    http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


Func = tuple[str, int, str]
"""A profiled function as pstats names it: (file, line, function name)."""


def profile_table(stats: pstats.Stats) -> dict[Func, Any]:
    """pstats' raw table ``Stats.stats``: function -> (primitive calls, calls, own s, cumulative s, callers).

    The attribute every pstats report reads; typeshed leaves it out, so it is read through ``vars``.
    """
    table: dict[Func, Any] = vars(stats)["stats"]
    return table
