"""Crosstalk: many sessions, each with many concurrent ``tools/call``s; does every call get its answer?

    .venv/bin/python -m bench.crosstalk                       # 3 runs per transport, 20 sessions x 50 calls
    .venv/bin/python -m bench.crosstalk --runs 8 --transport sse --log-level DEBUG
    .venv/bin/python -m bench.crosstalk --url http://127.0.0.1:P   # a server already running
    .venv/bin/python -m bench.crosstalk --pause 4.99               # idle at the client pool's 5 s edge first

Starts the CLI (``python -m apcore_mcp --extensions-dir examples/extensions --transport
streamable-http``) on a free 127.0.0.1 port unless ``--url`` is given, and stops it by PID.
Each run opens ``--sessions`` sessions of one transport at once with the Python SDK client
(``modern``: 2026-07-28, ``mode="auto"``; ``handshake``: 2025-11-25, ``mode="legacy"``; ``sse``:
the legacy SSE transport at ``/sse``), and each session sends ``--calls`` ``text.stats`` calls
at once, every one with a unique text. Every call ends in one of:

- ``answered``: a result naming its own text as its word (``misrouted`` if not);
- ``refused``: a JSON-RPC error (a limit's refusal is an answer, not a loss);
- ``lost``: no answer. The exception the client raised instead (a ``ReadError``, a timeout, a
  closed stream) is printed with the call's JSON-RPC request id, as sent on the wire (read from
  the client's own HTTP requests), so the server's DEBUG log can be searched for it.

Everything is bounded: a run by ``--run-timeout`` (a call still waiting then is lost), the
whole by ``--runs``. Prints one table: transport | runs | sent | answered | refused | lost | misrouted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from bench.common import REPO_ROOT, free_port, stop_process, wait_port

TRANSPORTS = ("modern", "handshake", "sse")
TOOL = "text.stats"
MODERN_VERSION = "2026-07-28"


@dataclass
class Outcome:
    """One call: its text, its request id once sent, and how it ended."""

    text: str
    request_id: Any = None
    state: str = "pending"  # answered | refused | misrouted | lost | pending
    detail: str = ""


@dataclass
class Tally:
    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: list[tuple[int, int, Outcome]] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)


def _describe(exc: BaseException) -> str:
    """The innermost exception of a group, as ``Type: message`` (with where it was raised)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
    return f"{type(exc).__name__}: {str(exc)[:160]}{where}"


class IdLog:
    """The JSON-RPC id each call's text went out with, read from the client's own HTTP requests."""

    def __init__(self) -> None:
        self.ids: dict[str, Any] = {}

    async def __call__(self, request: httpx2.Request) -> None:
        if request.method != "POST":
            return
        with contextlib.suppress(ValueError, AttributeError, httpx2.RequestNotRead):
            message = json.loads(request.content)
            if isinstance(message, dict) and message.get("method") == "tools/call":
                self.ids[message["params"]["arguments"]["text"]] = message.get("id")

    def client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The SDK's own client (its timeouts), with this log as a request hook."""
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks["request"].append(self)
        return client


@contextlib.asynccontextmanager
async def _session(url: str, transport: str, ids: IdLog) -> AsyncIterator[Any]:
    if transport == "sse":
        async with (
            sse_client(f"{url}/sse", httpx_client_factory=ids.client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
        return
    mode = "auto" if transport == "modern" else "legacy"
    async with ids.client() as http:
        wire = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(wire, mode=mode, cache=None) as client:
            if transport == "modern" and client.protocol_version != MODERN_VERSION:
                raise RuntimeError(f"the server speaks {client.protocol_version}, not {MODERN_VERSION}")
            yield client


async def _call(session: Any, outcome: Outcome) -> None:
    try:
        result = await session.call_tool(TOOL, {"text": outcome.text})
    except MCPError as exc:
        # The client makes these up itself when a stream breaks or its own timeout passes.
        made_up = exc.error.code == CONNECTION_CLOSED or exc.error.message.endswith("timed out")
        outcome.state = "lost" if made_up else "refused"
        outcome.detail = f"{exc.error.code}: {exc.error.message[:160]}"
        return
    except Exception as exc:
        outcome.state, outcome.detail = "lost", _describe(exc)
        return
    structured = getattr(result, "structured_content", None) or {}
    if getattr(result, "is_error", False):
        first = result.content[0] if result.content else None
        outcome.state, outcome.detail = "refused", f"isError: {getattr(first, 'text', '')[:100]}"
    elif structured.get("top_words") == [{"word": outcome.text, "count": 1}]:
        outcome.state = "answered"
    else:
        outcome.state, outcome.detail = "misrouted", str(structured)[:100]


async def _run_session(
    url: str, transport: str, outcomes: list[Outcome], ids: IdLog, ready: anyio.Event, pause: float
) -> None:
    try:
        async with _session(url, transport, ids) as session:
            await ready.wait()
            if pause:  # one call, then the pooled connections sit idle this long before the burst
                await session.call_tool(TOOL, {"text": "warm"})
                await anyio.sleep(pause)
            async with anyio.create_task_group() as calls:
                for outcome in outcomes:
                    calls.start_soon(_call, session, outcome)
    except Exception as exc:  # the session itself failed: every call it had not ended is lost
        for outcome in outcomes:
            if outcome.state == "pending":
                outcome.state, outcome.detail = "lost", f"session: {_describe(exc)}"


async def one_run(
    url: str, transport: str, sessions: int, calls: int, bound: float, pause: float = 0.0
) -> list[list[Outcome]]:
    """One run: ``sessions`` sessions of ``transport``, ``calls`` concurrent calls each, within ``bound`` s."""
    token = secrets.token_hex(4)
    # One unique word per call: a reply names its own text as its most frequent word.
    table = [[Outcome(f"{token}s{s}c{c}") for c in range(calls)] for s in range(sessions)]
    ids = IdLog()
    ready = anyio.Event()
    with anyio.move_on_after(bound):
        async with anyio.create_task_group() as group:
            for outcomes in table:
                group.start_soon(_run_session, url, transport, outcomes, ids, ready, pause)
            ready.set()
    for outcomes in table:
        for outcome in outcomes:
            outcome.request_id = ids.ids.get(outcome.text)
            if outcome.state == "pending":
                outcome.state, outcome.detail = "lost", f"no answer within the run's {bound:g} s"
    return table


@contextlib.contextmanager
def _server(log: Path, log_level: str, extra: list[str]) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", "examples/extensions"]
    cmd += ["--transport", "streamable-http", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--log-level", log_level, *extra]
    with log.open("ab") as err:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            wait_port(port, proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop_process(proc)


class _Failures(logging.Filter):
    """Only the client's records that carry an exception or warn (a broken stream)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is not None or record.levelno >= logging.WARNING


def _client_log(path: Path) -> None:
    """The SDK client hides why a stream ended (a DEBUG record with its traceback): keep those in ``path``."""
    handler = logging.FileHandler(path)
    handler.addFilter(_Failures())
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("mcp.client", "mcp.shared"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)


def _print(tallies: dict[str, Tally]) -> None:
    head = ("transport", "runs", "sent", "answered", "refused", "lost", "misrouted")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for name, tally in tallies.items():
        o = tally.outcomes
        sent = sum(o.values())
        print(f"{name} | {tally.runs} | {sent} | {o['answered']} | {o['refused']} | {o['lost']} | {o['misrouted']}")
    for name, tally in tallies.items():
        for reason, count in tally.refusals.most_common(5):
            print(f"{name}: refused x{count}: {reason}")
        for run, session, outcome in tally.lost[:40]:
            print(f"{name}: LOST run {run} session {session} id={outcome.request_id}: {outcome.detail}")


async def _drive(args: argparse.Namespace, url: str) -> dict[str, Tally]:
    tallies = {name: Tally() for name in args.transport}
    for run in range(args.runs):
        for name in args.transport:
            table = await one_run(url, name, args.sessions, args.calls, args.run_timeout, args.pause)
            tally = tallies[name]
            tally.runs += 1
            for s, outcomes in enumerate(table):
                for outcome in outcomes:
                    tally.outcomes[outcome.state] += 1
                    if outcome.state == "lost":
                        tally.lost.append((run, s, outcome))
                    elif outcome.state == "refused":
                        tally.refusals[outcome.detail] += 1
            print(f"run {run} {name}: {dict(Counter(o.state for row in table for o in row))}", flush=True)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", action="append", choices=TRANSPORTS, help="repeatable; default all three")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50, help="concurrent calls per session")
    parser.add_argument("--run-timeout", type=float, default=60.0)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds idle after one call, before the burst")
    parser.add_argument("--url", help="a running server (else the CLI is started)")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log", type=Path, help="the server's log (default: a temporary file, printed)")
    parser.add_argument("--server-arg", action="append", default=[], help="one more CLI argument, repeatable")
    args = parser.parse_args()
    args.transport = args.transport or list(TRANSPORTS)
    logs = Path(tempfile.mkdtemp(prefix="crosstalk-"))
    _client_log(logs / "client.log")
    print(f"client log (broken streams and their tracebacks): {logs / 'client.log'}", flush=True)
    if args.url:
        tallies = anyio.run(_drive, args, args.url.rstrip("/"))
    else:
        log = args.log or logs / "server.log"
        print(f"server log: {log}", flush=True)
        with _server(log, args.log_level, args.server_arg) as url:
            tallies = anyio.run(_drive, args, url)
    _print(tallies)


if __name__ == "__main__":
    main()
