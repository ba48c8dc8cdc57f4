"""Resumable streams: a session's events are its own, their ids unguessable, their memory bounded in bytes.

A client whose response stream broke resumes it with ``GET /mcp`` and ``Last-Event-ID``. Nobody
else may: not another session of the same caller, not another principal, not with the exact id
the owner received; a session that ended leaves nothing behind; and however large the results,
the server keeps at most ``resume_max_bytes`` of them (``resume_stream_max_bytes`` per stream).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from apcore import Registry
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import JSONRPCResponse
from pydantic import BaseModel
from starlette.applications import Starlette

from apcore_mcp import release_stream
from apcore_mcp.bridge import Bridge
from apcore_mcp.http.events import ResumeStore
from apcore_mcp.run.serving import serving_http
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry
from tests._support.hostile import (
    ACCEPT,
    INIT,
    metric,
    metrics_text,
    server_process,
    session_headers,
    tool_call,
    wait_until,
)
from tests._support.hostile_modules import hostile_registry
from tests._support.results import text_of

MiB = 1024 * 1024
ALICE, BOB = "alice-key-" + "a" * 30, "bob-key-" + "b" * 30
KEYS = {"auth": "api-key", "auth_api_keys": (api_key_entry(ALICE, "alice"), api_key_entry(BOB, "bob"))}
SECRET = "alice-private-"
SECRET_CALL = {"size": 4096, "fill": SECRET}
RESUME_UNAVAILABLE = '"code":-32013'  # http.events.RESUME_UNAVAILABLE, as the wire says it


@contextlib.asynccontextmanager
async def served(registry: Registry | None = None, **settings: Any) -> AsyncIterator[tuple[str, ResumeStore | None]]:
    """uvicorn serving the hostile registry in this loop; its URL and the app's resume store (None if none)."""
    bridge = Bridge.build(registry or hostile_registry(), Settings(**settings))
    async with serving_http(bridge) as (server, url):
        app = server.config.app
        assert isinstance(app, Starlette)
        store = app.state.resume_store
        assert store is None or isinstance(store, ResumeStore)
        yield url, store


def headers_for(session_id: str, key: str | None = None) -> dict[str, str]:
    return {**session_headers(session_id), **({"Authorization": f"Bearer {key}"} if key else {})}


async def open_as(http: httpx.AsyncClient, url: str, key: str | None = None) -> str:
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    response = await http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **auth})
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(f"{url}/mcp", json=note, headers=headers_for(session_id, key))).status_code == 202
    return session_id


async def events_of(response: httpx.Response) -> list[tuple[str | None, str]]:
    """The (id, data) of each SSE event of a response, to its end."""
    events: list[tuple[str | None, str]] = []
    event_id: str | None = None
    data = ""
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and (event_id is not None or data):
            events.append((event_id, data))
            event_id, data = None, ""
    return events


async def call(
    http: httpx.AsyncClient,
    url: str,
    session_id: str,
    request_id: int,
    arguments: dict[str, Any],
    key: str | None = None,
) -> list[tuple[str | None, str]]:
    """``hostile.blob`` called in the session: the events of its whole response stream."""
    body = tool_call(request_id, "hostile.blob", arguments)
    async with http.stream("POST", f"{url}/mcp", json=body, headers=headers_for(session_id, key)) as response:
        assert response.status_code == 200
        return await events_of(response)


async def primed(http: httpx.AsyncClient, url: str, session_id: str, request_id: int, arguments: dict[str, Any]) -> str:
    """POST a call, read up to its priming event, then drop the connection (a proxy cut it): that event's id."""
    body = tool_call(request_id, "hostile.blob", arguments)
    async with http.stream("POST", f"{url}/mcp", json=body, headers=headers_for(session_id)) as response:
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                return line[3:].strip()
    raise AssertionError("no priming event")


async def resume(
    http: httpx.AsyncClient, url: str, session_id: str, event_id: str, key: str | None = None
) -> tuple[int, str]:
    """``GET /mcp`` with ``Last-Event-ID``: the status and what came, up to a response (or 5 s of nothing more)."""
    headers = {**headers_for(session_id, key), "Last-Event-ID": event_id}
    lines: list[str] = []
    status = 0
    with anyio.move_on_after(5):
        async with http.stream("GET", f"{url}/mcp", headers=headers) as response:
            status = response.status_code
            async for line in response.aiter_lines():
                lines.append(line)
                if line.startswith("data:") and ('"result"' in line or '"error"' in line):
                    break  # the SDK keeps a resumed stream open after its response
    return status, "\n".join(lines)


def event_ids(events: list[tuple[str | None, str]]) -> list[str]:
    return [event_id for event_id, _ in events if event_id]


def guesses(real: list[str]) -> list[str]:
    """Every id another client could present: the owner's own, its neighbours, and counters with request ids."""
    near = [f"{event_id.rpartition('.')[0]}.{n}" for event_id in real if "." in event_id for n in range(4)]
    counters = [f"{n}_{stream}" for n in range(1, 9) for stream in ("1", "_GET_stream")]
    return [*real, *near, *counters]


# -- 1. another session, another principal --------------------------------------------------------


async def test_another_session_cannot_replay_a_sessions_events_by_any_id() -> None:
    async with served() as (url, _), httpx.AsyncClient(timeout=10) as http:
        alice = await open_as(http, url)
        events = await call(http, url, alice, 1, SECRET_CALL)
        assert SECRET in events[-1][1]  # alice got her result, and the ids of its events
        real = event_ids(events)
        assert len(real) == 2  # the priming event and the result
        bob = await open_as(http, url)
        for event_id in guesses(real):
            status, text = await resume(http, url, bob, event_id)
            assert SECRET not in text, f"session B replayed A's stream with Last-Event-ID {event_id!r}"
            assert status == 200 and RESUME_UNAVAILABLE in text, text  # refused, not an empty stream
        status, text = await resume(http, url, alice, real[0])  # alice herself still can
        assert SECRET in text


async def test_another_principal_cannot_replay_a_principals_events() -> None:
    async with served(**KEYS) as (url, _), httpx.AsyncClient(timeout=10) as http:
        alice = await open_as(http, url, ALICE)
        real = event_ids(await call(http, url, alice, 1, SECRET_CALL, ALICE))
        bob = await open_as(http, url, BOB)
        for event_id in guesses(real):
            status, text = await resume(http, url, bob, event_id, BOB)
            assert SECRET not in text, f"bob replayed alice's stream with Last-Event-ID {event_id!r}"
            assert RESUME_UNAVAILABLE in text
        # Alice's own session id with bob's credential: the session is not his (404, as if unknown).
        status, text = await resume(http, url, alice, real[0], BOB)
        assert status == 404 and SECRET not in text


# -- 2. unguessable ids ---------------------------------------------------------------------------


def shared_prefix(a: str, b: str) -> int:
    return next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def unshared(a: str, b: str) -> str:
    """What is left of ``a`` once the prefix and suffix it shares with ``b`` are taken off."""
    prefix = shared_prefix(a, b)
    suffix = shared_prefix(a[prefix:][::-1], b[prefix:][::-1])
    return a[prefix : len(a) - suffix]


async def test_event_ids_of_two_streams_share_no_guessable_structure() -> None:
    async with served() as (url, _), httpx.AsyncClient(timeout=10) as http:
        sessions = [await open_as(http, url), await open_as(http, url)]
        priming = [
            event_ids(await call(http, url, session_id, request_id, {"size": 10}))[0]
            for session_id in sessions
            for request_id in (1, 2, 3)
        ]
    assert len(set(priming)) == len(priming)
    for a, b in itertools.combinations(priming, 2):
        # 16 characters of base64url (or hex) differ: at least 64 bits that only the server knows.
        assert len(unshared(a, b)) >= 16, (a, b)


# -- 3. a session that ends leaves nothing ------------------------------------------------------


async def test_a_deleted_sessions_streams_are_dropped() -> None:
    async with served() as (url, store), httpx.AsyncClient(timeout=10) as http:
        bob = await open_as(http, url)
        held_by_bob = getattr(store, "held_bytes", None)  # his initialize's stream
        alice = await open_as(http, url)
        real = event_ids(await call(http, url, alice, 1, {**SECRET_CALL, "size": 100_000}))
        assert (await http.delete(f"{url}/mcp", headers=headers_for(alice))).status_code == 200
        for event_id in real:
            _, text = await resume(http, url, bob, event_id)
            assert SECRET not in text
        status, _ = await resume(http, url, alice, real[0])
        assert status == 404
        assert store is not None
        assert (store.session_count, store.held_bytes) == (1, held_by_bob)  # nothing of alice's


async def test_a_reaped_sessions_streams_are_dropped() -> None:
    async with served(session_idle_timeout=0.5) as (url, store), httpx.AsyncClient(timeout=10) as http:
        alice = await open_as(http, url)
        real = event_ids(await call(http, url, alice, 1, {**SECRET_CALL, "size": 100_000}))

        async def no_session() -> bool:
            return metric(await metrics_text(url), "apcore_mcp_active_sessions") == 0

        await wait_until(no_session, "alice's session reaped", timeout=10)
        bob = await open_as(http, url)
        for event_id in real:
            _, text = await resume(http, url, bob, event_id)
            assert SECRET not in text
        assert store is not None
        assert store.session_count == 1 and store.held_bytes < 100_000  # bob's initialize only


# -- 4. bounded in bytes --------------------------------------------------------------------------


def result(request_id: int, size: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"blob": "x" * size})


async def replayed(events: Any, event_id: str) -> list[Any]:
    messages: list[Any] = []

    async def keep(event: Any) -> None:
        messages.append(event.message)

    await events.replay_events_after(event_id, keep)
    return messages


async def test_the_store_keeps_at_most_its_byte_budgets() -> None:
    from apcore_mcp.http.events import RESUME_UNAVAILABLE as CODE

    store = ResumeStore(max_bytes=4 * MiB, stream_max_bytes=1 * MiB)
    sessions = [store.open(f"s{n}") for n in range(3)]
    first = await sessions[0].store_event("r0", None)
    held = []
    for n in range(300):  # 75 MB of results, in 3 sessions x 7 streams
        await sessions[n % 3].store_event(f"r{n % 7}", result(n, 256 * 1024))
        held.append(store.held_bytes)
    assert max(held) <= 4 * MiB and min(held[20:]) > 3 * MiB  # full, never over
    # The oldest events went: resuming from before them is an error, not what is left.
    assert store.stream_of("s0", first) is None
    messages = await replayed(sessions[0], first)
    assert len(messages) == 1 and messages[0].error.code == CODE and messages[0].id is None
    # One stream holds at most its budget: three results of 256 KiB, not four.
    stream = await sessions[1].store_event("solo", None)
    ids = [await sessions[1].store_event("solo", result(n, 256 * 1024)) for n in range(6)]
    assert [message.id for message in await replayed(sessions[1], ids[2])] == [3, 4, 5]
    assert store.stream_of("s1", ids[2]) == "solo" and store.stream_of("s1", ids[1]) is None
    assert store.stream_of("s1", stream) is None
    [error] = await replayed(sessions[1], ids[1])
    assert error.error.code == CODE and "dropped" in error.error.message
    # Another session's ids are unknown to this one; a session that ends gives back its bytes.
    [error] = await replayed(sessions[2], ids[3])
    assert error.error.code == CODE and store.stream_of("s2", ids[3]) is None
    before = store.held_bytes
    store.close("s1")
    assert store.held_bytes < before - 3 * 256 * 1024 and store.stream_of("s1", ids[3]) is None
    for n in (0, 2):
        store.close(f"s{n}")
    assert (store.held_bytes, store.session_count) == (0, 0)


async def test_a_session_flooding_the_store_evicts_its_own_events_not_anothers() -> None:
    """Past the total budget the largest holder pays: another caller's small stream stays resumable."""
    store = ResumeStore(max_bytes=4 * MiB, stream_max_bytes=1 * MiB)
    quiet, flood = store.open("quiet"), store.open("flood")
    kept = await quiet.store_event("q", None)
    await quiet.store_event("q", result(0, 64 * 1024))
    first_flood = await flood.store_event("f0", None)
    for n in range(200):  # 50 MB of results in one session, over many streams
        await flood.store_event(f"f{n % 9}", result(n, 256 * 1024))
    assert store.held_bytes <= 4 * MiB
    assert store.stream_of("quiet", kept) == "q"  # before: evicted first, as the oldest event of all
    assert [message.id for message in await replayed(quiet, kept)] == [0]
    assert store.stream_of("flood", first_flood) is None  # the flood's own oldest went


async def test_150_results_of_1_mb_hold_at_most_the_budget() -> None:
    async with served() as (url, store), httpx.AsyncClient(timeout=30) as http:
        assert store is not None
        session = await open_as(http, url)
        priming: list[str] = []
        held: list[int] = []
        for request_id in range(150):
            events = await call(http, url, session, request_id, {"size": MiB})
            assert len(events[-1][1]) > MiB  # the result came whole
            priming.append(event_ids(events)[0])
            held.append(store.held_bytes)
        _, text = await resume(http, url, session, priming[0])  # past the horizon: an error, no partial replay
        assert RESUME_UNAVAILABLE in text and "xxxx" not in text
        _, text = await resume(http, url, session, priming[-1])
        assert json.loads(text.split("data:")[-1])["id"] == 149
        assert max(held) <= 48 * MiB and held[-1] > 40 * MiB  # never over; full, the newest results kept


async def test_a_result_over_the_stream_budget_is_an_error_on_resume() -> None:
    settings = {"resume_max_bytes": 4 * MiB, "resume_stream_max_bytes": 512 * 1024}
    async with served(**settings) as (url, store), httpx.AsyncClient(timeout=10) as http:
        session = await open_as(http, url)
        small = await primed(http, url, session, 1, {"size": 1000})
        large = await primed(http, url, session, 2, {"size": MiB})
        assert store is not None
        await wait_until(lambda: store.stream_of(session, large) is None, "the large result dropped")
        _, text = await resume(http, url, session, large)
        assert RESUME_UNAVAILABLE in text and "xxxx" not in text
        _, text = await resume(http, url, session, small)
        assert '"id":1' in text and "x" * 1000 in text


class Released:
    """Lets go of its client's stream (a long call behind a proxy would), then returns a large result."""

    description = "Releases its stream, then returns `size` characters"

    class Input(BaseModel):
        size: int = MiB

    input_schema = Input

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        assert await release_stream(context)
        return {"blob": "x" * inputs.get("size", MiB)}


async def test_the_sdk_client_resuming_past_the_horizon_gets_an_error() -> None:
    registry = hostile_registry()
    registry.register("hostile.released", Released())
    # The client reconnects a second after the release; the result is stored (and dropped) long before.
    settings = {"resume_max_bytes": 4 * MiB, "resume_stream_max_bytes": 256 * 1024, "sse_retry_ms": 1000}
    async with served(registry, **settings) as (url, _), Client(f"{url}/mcp", mode="legacy") as client:
        small = await client.call_tool("hostile.released", {"size": 1000})
        assert "x" * 1000 in text_of(small)  # resumed and replayed
        with anyio.fail_after(10), pytest.raises(MCPError) as raised:  # 400 KB: over the stream's budget
            await client.call_tool("hostile.released", {"size": 400_000})
        assert raised.value.error.code == -32013 and "dropped" in raised.value.error.message


# -- the figure: RSS of a server process after 150 results of 1 MB ---------------------------------


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def rss_after_large_results(tmp_path: Path, *settings: str) -> int:
    with server_process(*settings, log=tmp_path / f"server{len(settings)}.log") as (proc, url):
        async with httpx.AsyncClient(timeout=30) as http:
            session = await open_as(http, url)
            for request_id in range(150):
                await call(http, url, session, request_id, {"size": MiB})
        return rss_bytes(proc.pid)


@pytest.mark.slow
async def test_the_server_rss_stays_within_the_budget_of_a_server_that_keeps_nothing(tmp_path: Path) -> None:
    resumable = await rss_after_large_results(tmp_path)
    plain = await rss_after_large_results(tmp_path, "resumable=false")
    figures = f"RSS after 150 x 1 MB results: resumable {resumable / MiB:.0f} MiB, --no-resumable {plain / MiB:.0f} MiB"
    print(figures)
    assert resumable <= plain + 64 * MiB + 48 * MiB, figures  # the budget, and allocator slack
