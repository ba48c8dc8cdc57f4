"""2026-07-28 clients against two replicas behind nginx round-robin (``deploy/nginx-replicas.conf``).

No sessions: consecutive requests of one client land on alternate replicas (nginx's access log
says which), and calls, lists and input-required rounds work whichever replica answers. The
``requestState`` of a round sealed by one replica is opened by another because they share
``request_state_keys``; a key rotation ``[old]`` -> ``[new, old]`` keeps every round working
across replicas once rolled out (new seals, old still opens).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from tests._support.replicas import (
    CALL_SECONDS,
    ROUND_ROBIN,
    Proxy,
    Replica,
    modern_call,
    new_key,
    proxy_running,
    replicas_running,
    start_replica,
    structured,
)

pytestmark = [pytest.mark.redis, pytest.mark.nginx]

INVALID_PARAMS = -32602


@dataclass
class Cluster:
    replicas: list[Replica]
    proxy: Proxy

    def replica_at(self, address: str) -> str:
        return next(replica.name for replica in self.replicas if replica.address == address)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("modern")
    with (
        replicas_running(["a", "b"], work, "--dynamic", "--request-state-keys", new_key()) as replicas,
        proxy_running(ROUND_ROBIN, replicas, work / "proxy") as proxy,
    ):
        yield Cluster(replicas, proxy)


async def approve(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


async def decline(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def test_consecutive_calls_land_on_both_replicas_and_all_succeed(cluster: Cluster) -> None:
    before = len(cluster.proxy.entries())
    with anyio.fail_after(CALL_SECONDS):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None) as client:
            assert client.session.protocol_version == "2026-07-28"
            answers = [structured(await client.call_tool("replica.echo", {"text": f"m{i}"})) for i in range(8)]
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert [answer["text"] for answer in answers] == [f"m{i}" for i in range(8)]
    assert {answer["replica"] for answer in answers} == {"a", "b"}
    assert {"replica.echo", "replica.purge", "replica.slow", "replica.ask", "replica.add"} <= names
    requests = [e for e in cluster.proxy.entries()[before:] if e["request"] == "POST /mcp"]
    assert len(requests) >= 10  # discover, the calls, the lists
    # No stickiness: each request of the client went to the other replica than the one before it.
    upstreams = [e["upstream"] for e in requests]
    assert all(first != second for first, second in itertools.pairwise(upstreams)), upstreams


async def test_approval_round_sealed_by_one_replica_is_opened_by_the_other(cluster: Cluster) -> None:
    asked: list[str] = []

    async def approve_and_note(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return await approve(context, params)

    with anyio.fail_after(CALL_SECONDS):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None, elicitation_callback=approve_and_note) as client:
            before = len(cluster.proxy.entries())
            ran = structured(await client.call_tool("replica.purge", {"target": "logs"}))
    assert ran["purged"] == "logs"
    assert len(asked) == 1 and "replica.purge" in asked[0]
    rounds = [e for e in cluster.proxy.entries()[before:] if e["name"] == "replica.purge"]
    assert len(rounds) == 2, rounds  # the call, then its retry carrying the answer and the sealed state
    first, retry = (cluster.replica_at(entry["upstream"]) for entry in rounds)
    assert first != retry, "both rounds reached the same replica: nothing was proved"
    assert ran["replica"] == retry


async def test_declined_approval_fails_closed_across_replicas(cluster: Cluster) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None, elicitation_callback=decline) as client:
            result = await client.call_tool("replica.purge", {"target": "logs"})
    assert result.is_error
    assert result.structured_content is None or "purged" not in result.structured_content


async def test_elicitation_round_across_replicas(cluster: Cluster) -> None:
    async def answer(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    with anyio.fail_after(CALL_SECONDS):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None, elicitation_callback=answer) as client:
            results = [structured(await client.call_tool("replica.ask", {"question": "colour?"})) for _ in range(2)]
    assert results == [{"asked": True, "answer": "blue"}] * 2


async def test_listen_through_the_proxy_is_acknowledged(cluster: Cluster) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None) as client:
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed
                # the listen stream stays open on its replica while calls go to both
                answers = [structured(await client.call_tool("replica.echo", {"text": "x"})) for _ in range(4)]
    assert {answer["replica"] for answer in answers} == {"a", "b"}


def test_request_state_key_rotation_across_replicas(tmp_path: Path) -> None:
    """``[old]`` -> ``[new, old]``: new seals, old still opens; a replica not yet rotated refuses cleanly."""
    old, new = new_key(), new_key()
    arguments = {"target": "cache"}
    answer = {"action": "accept", "content": {"approve": True}}

    def first_round(replica: Replica) -> tuple[str, str]:
        response = modern_call(replica.base, "replica.purge", arguments)
        result = response["result"]
        assert result["resultType"] == "input_required", response
        (key,) = result["inputRequests"]
        return key, result["requestState"]

    def retry(replica: Replica, key: str, state: str) -> dict[str, Any]:
        return modern_call(replica.base, "replica.purge", arguments, request_state=state, input_responses={key: answer})

    with replicas_running(["a", "b"], tmp_path, "--request-state-keys", old) as (a, b):
        key, sealed_old = first_round(a)
        assert retry(b, key, sealed_old)["result"]["structuredContent"]["replica"] == "b"  # same ring

        b.stop()  # rolling rotation: b first comes back with [new, old]
        b = start_replica("b", tmp_path / "rotated", "--request-state-keys", f"{new},{old}")
        try:
            # state sealed with the old key before the rotation still opens on the rotated replica
            assert retry(b, key, sealed_old)["result"]["structuredContent"]["replica"] == "b"
            key, sealed_new = first_round(b)
            # a replica still on [old] cannot open what [new, old] sealed: a clean -32602, no hang
            refused = retry(a, key, sealed_new)
            assert refused["error"]["code"] == INVALID_PARAMS, refused
            assert refused["error"]["data"] == {"reason": "invalid_request_state"}

            a.stop()  # the roll reaches a: every replica now seals with new and opens both
            a = start_replica("a", tmp_path / "rotated", "--request-state-keys", f"{new},{old}")
            try:
                assert retry(a, key, sealed_new)["result"]["structuredContent"]["replica"] == "a"
                key, sealed_by_a = first_round(a)
                assert retry(b, key, sealed_by_a)["result"]["structuredContent"]["replica"] == "b"
            finally:
                a.stop()
        finally:
            b.stop()


def test_replicas_without_shared_keys_refuse_each_others_state(tmp_path: Path) -> None:
    """Why the keys are a setting: with a random key per process, a round cannot cross replicas."""
    with replicas_running(["a", "b"], tmp_path) as (a, b):
        response = modern_call(a.base, "replica.purge", {"target": "x"})
        (key,) = response["result"]["inputRequests"]
        refused = modern_call(
            b.base,
            "replica.purge",
            {"target": "x"},
            request_state=response["result"]["requestState"],
            input_responses={key: {"action": "accept", "content": {"approve": True}}},
        )
    assert refused["error"]["code"] == INVALID_PARAMS
