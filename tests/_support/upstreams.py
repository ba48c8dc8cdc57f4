"""Helpers for the upstream tests: config entries for the test upstream, HTTP upstreams by PID, /proc checks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from apcore_mcp.testing import free_port
from apcore_mcp.upstream.config.parse import parse_config
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.passthrough import mcp_result_of
from apcore_mcp.upstream.toolsets import UpstreamRuntime

from tests._support.processes import stop_process, wait_ok

UPSTREAM = Path(__file__).resolve().parents[1] / "upstreams" / "simple_server.py"
MARKER = "simple_server.py"


def stdio_entry(*args: str, **fields: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running the test upstream over stdio."""
    return {"command": sys.executable, "args": [str(UPSTREAM), *args], **fields}


def url_entry(url: str, **fields: Any) -> dict[str, Any]:
    return {"url": url, **fields}


@contextlib.contextmanager
def http_upstream(transport: str = "http", *args: str, port: int | None = None) -> Iterator[tuple[str, int]]:
    """The test upstream over ``http`` or ``sse`` on a free 127.0.0.1 port; yields (endpoint URL, pid)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "--transport", transport, "--port", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc)
        path = "/mcp" if transport == "http" else "/sse"
        yield f"http://127.0.0.1:{port}{path}", proc.pid
    finally:
        stop_process(proc)
        if proc.stderr is not None:
            proc.stderr.close()


# -- processes ------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) from /proc, or None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def upstream_children(parent: int | None = None) -> dict[int, str]:
    """Our child processes running the test upstream: pid -> state (``Z`` is a zombie)."""
    parent = parent or os.getpid()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[1] == parent and MARKER in _cmdline(int(entry.name)):
            found[int(entry.name)] = stat[0]
    return found


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def gone(pid: int) -> bool:
    """Not running and not a zombie either (reaped)."""
    return _stat(pid) is None


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def eventually(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Wait for ``condition()`` (a state of another process, which sends us no event), bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        await anyio.sleep(0.02)


async def pid_of(executor: Any, module_id: str, context: Any = None) -> int:
    """The pid the test upstream reports through one of its ``pid`` modules."""
    from apcore import Context

    result = mcp_result_of(await executor.call_async(module_id, {}, context or Context.create()))
    assert result is not None and isinstance(result.structured_content, dict)
    return int(result.structured_content["pid"])


@dataclass
class Mount:
    runtime: UpstreamRuntime
    executor: Any

    @property
    def registry(self) -> Any:
        return self.executor.registry


@contextlib.asynccontextmanager
async def mounted(
    data: dict[str, Any],
    *,
    toolsets: tuple[str, ...] = ("default",),
    executor: Any = None,
    environ: dict[str, str] | None = None,
    enabled: bool = True,
    log_dir: Path | None = None,
    skills: Any = None,
) -> AsyncIterator[Mount]:
    """The servers of ``data`` (an mcp.json document) mounted into ``executor``'s registry (a new one by default)."""
    from apcore import Executor, Registry

    executor = executor or Executor(Registry())
    config = parse_config(data, environ or {})
    async with UpstreamPool(redactor=config.redactor, log_dir=log_dir) as pool:
        runtime = UpstreamRuntime(executor.registry, pool, enabled=enabled, skills=skills)
        try:
            await runtime.apply(config, toolsets)
            yield Mount(runtime, executor)
        finally:
            await runtime.close()
