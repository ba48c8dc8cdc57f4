"""Worker processes for the tests: which processes serve, which one answered (Linux ``/proc``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from apcore_mcp.testing import RunningServer

ATTEMPTS = 60
"""Fresh connections tried before giving up on seeing every worker answer (each costs milliseconds)."""


def children_of(server: RunningServer) -> set[str]:
    """The pids of the worker processes of ``server``'s supervisor (uvicorn spawns them; its
    resource tracker, also a child, is not a worker)."""
    assert server.process is not None
    supervisor = server.process.pid
    found: set[str] = set()
    for task in Path(f"/proc/{supervisor}/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:  # gone meanwhile
                continue
            if b"spawn_main" in command:
                found.add(pid)
    return found


def pids_answering(answer: Callable[[], str], expected: int = 2) -> set[str]:
    """The distinct processes ``answer()`` named over fresh connections, until ``expected`` did
    (bounded: ``ATTEMPTS`` calls)."""
    seen: set[str] = set()
    for _ in range(ATTEMPTS):
        seen.add(answer())
        if len(seen) >= expected:
            break
    return seen


async def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds}s: {what}"
        await asyncio.sleep(0.05)
