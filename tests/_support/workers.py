"""Worker processes for the tests: our CLI with ``--workers 2``, which processes serve, which one
answered (Linux ``/proc``), and an approval round to replay over fresh connections."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.replicas import EXTENSIONS, modern_call

APPROVE = {"action": "accept", "content": {"approve": True}}

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


@contextlib.contextmanager
def workers(workdir: Path, *args: str, extensions: Path = EXTENSIONS) -> Iterator[RunningServer]:
    """``apcore-mcp --workers 2 ...`` serving ``extensions``, stopped by its process group."""
    server = start_server(apcore_server(extensions, "--workers", "2", *args), "streamable-http", workdir)
    try:
        yield server
    finally:
        server.stop()


def base_of(server: RunningServer) -> str:
    assert server.base_url is not None
    return server.base_url


def approved_retry(base: str, target: str) -> Callable[[], dict[str, Any]]:
    """Ask once for ``replica.purge``'s approval; the function returned sends the approved retry
    (the same sealed state and "yes"), each time on a connection of its own."""
    asked = modern_call(base, "replica.purge", {"target": target})["result"]
    (key,) = asked["inputRequests"]
    return functools.partial(
        modern_call,
        base,
        "replica.purge",
        {"target": target},
        request_state=asked["requestState"],
        input_responses={key: APPROVE},
    )


def ran(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers whose call ran (a result that is not a tool error)."""
    return [answer for answer in answers if "result" in answer and not answer["result"].get("isError")]
