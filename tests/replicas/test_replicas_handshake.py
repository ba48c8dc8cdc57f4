"""Handshake-era (2025-11-25) clients against two replicas behind nginx.

- ``--stateless`` replicas behind round-robin (``deploy/nginx-replicas.conf``): calls and lists
  work on whichever replica answers; what needs a channel back to the client is refused
  clearly: approval fails closed naming the reason, an elicitation is "could not ask".
- Stateful replicas behind ``hash $http_mcp_session_id consistent`` (``deploy/nginx-affinity.conf``):
  a session whose requests hash to the replica that created it sticks there; one that does not
  (the opening request carries no id), or whose replica went away, gets a clean 404 at once and
  the client recovers by initialising a new session. Never a hang.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from tests._support.replicas import (
    AFFINITY,
    CALL_SECONDS,
    ROUND_ROBIN,
    Proxy,
    Replica,
    proxy_running,
    replicas_running,
    structured,
)
from tests._support.results import text_of

pytestmark = [pytest.mark.redis, pytest.mark.nginx]

INVALID_REQUEST = -32600
ATTEMPTS = 30  # sessions opened until one sticks: each sticks with odds 1/2 (2 replicas)
FAIL_SECONDS = 2.0  # a refused session must fail at once, not after some timeout


@dataclass
class Cluster:
    replicas: list[Replica]
    proxy: Proxy


@contextlib.contextmanager
def cluster_of(tmp: Path, template: Path, *args: str) -> Iterator[Cluster]:
    with (
        replicas_running(["a", "b"], tmp, *args) as replicas,
        proxy_running(template, replicas, tmp / "proxy") as proxy,
    ):
        yield Cluster(replicas, proxy)


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster_of(tmp_path_factory.mktemp("stateless"), ROUND_ROBIN, "--stateless") as cluster:
        yield cluster


async def test_stateless_replicas_serve_calls_and_lists_round_robin(stateless: Cluster) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with Client(stateless.proxy.mcp, mode="legacy", cache=None) as client:
            assert client.session.protocol_version == "2025-11-25"
            answers = [structured(await client.call_tool("replica.echo", {"text": f"h{i}"})) for i in range(6)]
            listed = [sorted(tool.name for tool in (await client.list_tools()).tools) for _ in range(2)]
    assert [answer["text"] for answer in answers] == [f"h{i}" for i in range(6)]
    assert {answer["replica"] for answer in answers} == {"a", "b"}
    assert listed[0] == listed[1] and "replica.echo" in listed[0]


async def test_stateless_approval_fails_closed_with_the_reason(stateless: Cluster) -> None:
    asked: list[Any] = []

    async def approve(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    with anyio.fail_after(CALL_SECONDS):
        async with Client(stateless.proxy.mcp, mode="legacy", cache=None, elicitation_callback=approve) as client:
            results = [await client.call_tool("replica.purge", {"target": "logs"}) for _ in range(2)]
    assert asked == []  # never asked: there is no channel for the answer
    for result in results:
        assert result.is_error
        text = text_of(result)
        assert "stateless" in text and "2026-07-28" in text, text
        assert "purged" not in text


async def test_stateless_elicitation_is_could_not_ask(stateless: Cluster) -> None:
    async def answer(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    with anyio.fail_after(CALL_SECONDS):
        async with Client(stateless.proxy.mcp, mode="legacy", cache=None, elicitation_callback=answer) as client:
            result = structured(await client.call_tool("replica.ask", {"question": "colour?"}))
    assert result == {"asked": False, "answer": None}


async def test_legacy_sse_is_pinned_to_one_replica_by_client_address(stateless: Cluster) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with Client(sse_client(f"{stateless.proxy.url}/sse"), mode="legacy", cache=None) as client:
            answers = [structured(await client.call_tool("replica.echo", {"text": f"e{i}"})) for i in range(4)]
    assert len({answer["replica"] for answer in answers}) == 1  # its session lives in one process


# -- affinity by session id -------------------------------------------------------------------


async def approve(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


def session_refused(error: BaseException) -> bool:
    """Whether ``error`` (or one inside its groups) is the 404 of an unknown session."""
    if isinstance(error, MCPError):
        return error.error.code == INVALID_REQUEST and "Session" in error.error.message
    if isinstance(error, BaseExceptionGroup):
        return any(session_refused(inner) for inner in error.exceptions)
    return False


@dataclass
class Stuck:
    client: Client
    replica: str
    refusals: list[float]
    """Seconds each refused session took to fail."""


@contextlib.asynccontextmanager
async def sticking_session(url: str, **options: Any) -> AsyncIterator[Stuck]:
    """Open sessions until one sticks to a replica (the SDK client's way to recover from a 404)."""
    refusals: list[float] = []
    for _ in range(ATTEMPTS):
        started = time.monotonic()
        stuck: Stuck | None = None
        try:
            async with Client(url, mode="legacy", cache=None, **options) as client:
                first = structured(await client.call_tool("replica.echo", {"text": "hello"}))
                stuck = Stuck(client, first["replica"], refusals)
                yield stuck
                return
        except Exception as exc:
            if stuck is not None or not session_refused(exc):
                raise  # the caller's own failure, or not a refused session
            refusals.append(time.monotonic() - started)
    pytest.fail(f"no session stuck in {ATTEMPTS} attempts")


def test_affinity_config_hashes_on_the_session_id() -> None:
    upstream = AFFINITY.read_text().split("upstream apcore_mcp {", 1)[1].split("}", 1)[0]
    directives = [line.split("#")[0].strip() for line in upstream.splitlines()]
    assert "hash $http_mcp_session_id consistent;" in directives


async def test_affinity_sessions_stick_or_fail_cleanly_and_recover(tmp_path: Path) -> None:
    with cluster_of(tmp_path, AFFINITY) as cluster:
        with anyio.fail_after(60):
            async with sticking_session(cluster.proxy.mcp, elicitation_callback=approve) as stuck:
                answers = [
                    structured(await stuck.client.call_tool("replica.echo", {"text": f"s{i}"})) for i in range(5)
                ]
                assert {answer["replica"] for answer in answers} == {stuck.replica}  # one replica, its whole life
                # a stuck session has its channel back: approval by elicitation works
                purged = structured(await stuck.client.call_tool("replica.purge", {"target": "logs"}))
                assert purged == {"purged": "logs", "replica": stuck.replica}
            assert all(seconds < FAIL_SECONDS for seconds in stuck.refusals), stuck.refusals

            # Its replica goes away: the session's next request is a clean 404 from the other one.
            owner = next(replica for replica in cluster.replicas if replica.name == stuck.replica)
            survivor = next(replica for replica in cluster.replicas if replica is not owner)
            async with sticking_session(cluster.proxy.mcp) as stuck:
                if stuck.replica != owner.name:  # make the owner the replica that stops
                    owner, survivor = survivor, owner
                owner.stop()
                started = time.monotonic()
                with pytest.raises(MCPError) as refused:
                    await stuck.client.call_tool("replica.echo", {"text": "after"})
                assert time.monotonic() - started < FAIL_SECONDS
                assert session_refused(refused.value)
            # ... and a new session on the replica left works, first time.
            async with sticking_session(cluster.proxy.mcp) as again:
                assert again.replica == survivor.name
                assert again.refusals == []
