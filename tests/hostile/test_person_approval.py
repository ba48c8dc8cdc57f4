"""Approval a person decides: nothing the client sends, and no link but the right one, runs the tool.

A ``person`` tool sends the client a URL-mode elicitation pointing at this server's approval
page; only a decision on that page approves. The attacks: a client answering the elicitation
itself ("accept", even with ``approve: true``) in both eras; a link replayed, forged, expired
or taken to another tool's call; an approver whose token lacks the approver scope; a decline
and a timeout. Real SDK clients of both eras over uvicorn on 127.0.0.1, httpx for the page
(the browser), raw JSON-RPC for the crafted 2026-07-28 retries. Each module run writes a line
to a marker file, so "ran" is read from the disk.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import redis
from apcore import Executor, Registry
from mcp import Client, types
from mcp.client.context import ClientRequestContext

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.approval import MCPApprovalHandler
from apcore_mcp.http.explorer.page import CONFIRM_HEADER
from apcore_mcp.pipeline import install_pipeline
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer
from tests._support.hostile import MODERN_META, explorer_call, modern_headers, serving, sse_payload
from tests._support.person_approval import link_of, person_registry, runs, sdk_call
from tests._support.replicas import redis_running
from tests._support.tasks import Seen, Wire, task_executor

URL_META = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}}
ERAS = ("legacy", "auto")  # mcp.Client modes: 2025-11-25 handshake, 2026-07-28
APPROVER_KEY = "approver-key-" + "a" * 32
CALLER_KEY = "caller-key-" + "c" * 32
UNSCOPED_KEY = "unscoped-key-" + "u" * 32


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "wiped"


def page_path(link: str) -> str:
    """The app path of an approval link (the link names ``public_url``, not the test's free port)."""
    return urlsplit(link).path


async def decide(url: str, link: str, choice: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """What a person's browser does: open the page, press a button (the form's own key)."""
    async with httpx.AsyncClient(base_url=url, headers=headers or {}, timeout=20) as http:
        page = await http.get(page_path(link))
        found = re.search(r'name="form_key" value="([^"]+)"', page.text)
        key = found.group(1) if found else ""
        return await http.post(page_path(link), data={"decision": choice, "form_key": key})


async def self_approving(params: types.ElicitRequestParams) -> types.ElicitResult:
    """The client (or its model) saying yes on its own, to any form of the question."""
    return types.ElicitResult(action="accept", content={"approve": True})


async def self_approving_callback(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return await self_approving(params)


def refused(result: types.CallToolResult, why: str) -> None:
    assert result.is_error, result
    text = result.content[0].text if isinstance(result.content[0], types.TextContent) else ""
    assert why in text, text


# -- the client cannot approve --------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_answering_itself_runs_nothing(marker: Path, mode: str) -> None:
    async with serving(person_registry(), input_timeout=0.5) as (url, _bridge):
        result = await sdk_call(url, mode, self_approving, {"marker": str(marker)})
    refused(result, "no person decided")
    assert runs(marker) == 0


async def test_the_explorer_dialog_does_not_approve_a_person_tool(marker: Path) -> None:
    """The explorer's own confirmation (``confirmed``) counts for ``client`` tools only."""
    async with serving(person_registry(), explorer=True, input_timeout=0.5) as (url, _bridge):
        async with httpx.AsyncClient(timeout=20) as http:
            headers = {"origin": url, CONFIRM_HEADER: "person.wipe"}
            response = await explorer_call(http, url, "person.wipe", {"marker": str(marker)}, headers)
    assert runs(marker) == 0, response


# -- a person decides on the page ------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_a_person_approving_on_the_page_runs_it_once(
    marker: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    links: list[str] = []

    async def person_approves(params: types.ElicitRequestParams) -> types.ElicitResult:
        links.append(link_of(params))
        assert (await decide(url, links[-1], "approve")).status_code == 200
        return types.ElicitResult(action="accept")

    caplog.set_level(logging.INFO, logger="apcore_mcp.audit")
    async with serving(person_registry(), input_timeout=20) as (url, _bridge):
        result = await sdk_call(url, mode, person_approves, {"marker": str(marker), "password": "hunter2"})
        assert not result.is_error, result
        replay = await decide(url, links[0], "approve")
    assert replay.status_code == 404  # decided and used: the link is spent
    assert runs(marker) == 1
    audit = [record.getMessage() for record in caplog.records if record.name == "apcore_mcp.audit"]
    assert len(audit) == 1 and '"decision": "approved"' in audit[0] and "arguments_sha256" in audit[0]
    assert "hunter2" not in audit[0] and str(marker) not in audit[0]


@pytest.mark.parametrize("choice", ["decline", None])
async def test_a_decline_or_a_timeout_runs_nothing(marker: Path, choice: str | None) -> None:
    async def person(params: types.ElicitRequestParams) -> types.ElicitResult:
        if choice is not None:
            assert (await decide(url, link_of(params), choice)).status_code == 200
        return types.ElicitResult(action="accept")

    async with serving(person_registry(), input_timeout=0.5 if choice is None else 20) as (url, _bridge):
        result = await sdk_call(url, "legacy", person, {"marker": str(marker)})
    refused(result, "no person decided" if choice is None else "declined")
    assert runs(marker) == 0


# -- links that must decide nothing ----------------------------------------------------------


async def raw_call(
    url: str,
    name: str,
    arguments: dict[str, Any],
    state: str | None = None,
    answers: Any = None,
    meta: dict[str, Any] = URL_META,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": meta}
    if state is not None:
        params["requestState"], params["inputResponses"] = state, answers
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    async with httpx.AsyncClient(timeout=20) as http:
        response = await http.post(f"{url}/mcp", json=body, headers=modern_headers("tools/call", name))
    answer: dict[str, Any] = sse_payload(response.text)
    return answer.get("result") or answer


async def first_round(url: str, name: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
    """A 2026-07-28 call's first round: ``(requestState, the request's key, the approval link)``."""
    result = await raw_call(url, name, arguments)
    assert result["resultType"] == "input_required", result
    [(key, request)] = result["inputRequests"].items()
    assert request["params"]["mode"] == "url", request
    return result["requestState"], key, request["params"]["url"]


def forgeries(link: str) -> list[str]:
    approval_id, signature = page_path(link).rsplit("/", 1)[1].split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return [
        f"/approvals/{approval_id}.{flipped}",
        f"/approvals/{approval_id}",
        f"/approvals/{approval_id}.",
        link + "x",
    ]


async def test_a_client_that_takes_no_links_is_sent_none(marker: Path) -> None:
    """A client declaring form elicitation only gets no URL request: the call is refused, saying why."""
    forms_only = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    async with serving(person_registry()) as (url, _bridge):
        result = await raw_call(url, "person.wipe", {"marker": str(marker)}, meta=forms_only)
    assert result["resultType"] == "complete" and result["isError"] is True, result
    assert "cannot be sent its link" in result["content"][0]["text"]
    assert runs(marker) == 0


async def test_a_forged_link_decides_nothing(marker: Path) -> None:
    arguments = {"marker": str(marker)}
    async with serving(person_registry(), input_timeout=0.5) as (url, _bridge):
        state, key, link = await first_round(url, "person.wipe", arguments)
        for forged in forgeries(link):
            assert (await decide(url, forged, "approve")).status_code == 404, forged
        result = await raw_call(url, "person.wipe", arguments, state, {key: {"action": "accept"}})
    assert result["isError"] is True, result
    assert runs(marker) == 0


async def test_a_replayed_retry_or_link_runs_nothing_more(marker: Path) -> None:
    arguments = {"marker": str(marker)}
    async with serving(person_registry(), input_timeout=20) as (url, _bridge):
        state, key, link = await first_round(url, "person.wipe", arguments)
        assert (await decide(url, link, "approve")).status_code == 200
        answers = {key: {"action": "accept"}}
        first = await raw_call(url, "person.wipe", arguments, state, answers)
        assert first["resultType"] == "complete" and first["isError"] is False, first
        replays = await asyncio.gather(*(raw_call(url, "person.wipe", arguments, state, answers) for _ in range(3)))
        assert (await decide(url, link, "approve")).status_code == 404
    assert all(replay["resultType"] == "input_required" for replay in replays), replays  # asked anew
    assert runs(marker) == 1


async def test_a_link_for_one_tool_does_not_run_another(marker: Path) -> None:
    arguments = {"marker": str(marker)}
    async with serving(person_registry(), input_timeout=20) as (url, _bridge):
        state, key, link = await first_round(url, "person.wipe", arguments)
        assert (await decide(url, link, "approve")).status_code == 200
        other = await raw_call(url, "person.shred", arguments, state, {key: {"action": "accept"}})
        changed = await raw_call(url, "person.wipe", {**arguments, "password": "x"}, state, {key: {"action": "accept"}})
    for response in (other, changed):  # refused at the seal's request binding, or asked anew
        assert "error" in response or response["resultType"] == "input_required", response
    assert runs(marker) == 0


async def test_an_expired_link_decides_nothing(marker: Path) -> None:
    links: list[str] = []

    async def late_person(params: types.ElicitRequestParams) -> types.ElicitResult:
        links.append(link_of(params))
        return types.ElicitResult(action="accept")

    async with serving(person_registry(), input_timeout=0.3) as (url, _bridge):
        result = await sdk_call(url, "legacy", late_person, {"marker": str(marker)})
        refused(result, "no person decided")
        assert (await decide(url, links[0], "approve")).status_code == 404
    assert runs(marker) == 0


# -- who may decide --------------------------------------------------------------------------


async def test_an_approver_without_the_scope_approves_nothing(marker: Path) -> None:
    """Neither the caller nor an operator without ``mcp:approve`` sees the page or the queue; one with it sees both."""
    keys = (
        api_key_entry(CALLER_KEY, "caller", scopes="mcp:call"),
        api_key_entry(UNSCOPED_KEY, "ops", scopes="mcp:admin"),
        api_key_entry(APPROVER_KEY, "approver", scopes="mcp:approve"),
    )
    statuses: list[int] = []
    queued: list[str] = []

    async def unscoped_approver(params: types.ElicitRequestParams) -> types.ElicitResult:
        async with httpx.AsyncClient(base_url=url, timeout=20) as http:
            for token in (CALLER_KEY, UNSCOPED_KEY):
                statuses.append((await decide(url, link_of(params), "approve", bearer(token))).status_code)
                statuses.append((await http.get("/approvals", headers=bearer(token))).status_code)
            queue = (await http.get("/approvals", headers=bearer(APPROVER_KEY))).json()["pending"]
            page = await http.get(page_path(link_of(params)), headers=bearer(APPROVER_KEY))
        queued.extend(entry["tool"] for entry in queue)
        statuses.append(page.status_code)  # the approver could decide, and does not
        return types.ElicitResult(action="accept")

    async with serving(person_registry(), auth="api-key", auth_api_keys=keys, input_timeout=0.5) as (url, _bridge):
        result = await sdk_call(url, "legacy", unscoped_approver, {"marker": str(marker)}, **bearer(CALLER_KEY))
    assert statuses == [403, 403, 403, 403, 200]
    assert queued == ["person.wipe"]
    refused(result, "no person decided")
    assert runs(marker) == 0


async def test_with_auth_off_the_page_answers_loopback_only(marker: Path) -> None:
    """A request relayed from elsewhere (a trusted proxy naming another client) sees no page."""
    links: list[str] = []

    async def remote_person(params: types.ElicitRequestParams) -> types.ElicitResult:
        links.append(link_of(params))
        headers = {"x-forwarded-for": "203.0.113.9"}
        assert (await decide(url, links[-1], "approve", headers)).status_code == 404
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=20) as http:
            assert (await http.get("/approvals")).status_code == 404  # nor the queue
        return types.ElicitResult(action="accept")

    settings = {"forwarded_allow_ips": ("127.0.0.1",), "input_timeout": 0.5}
    async with serving(person_registry(), **settings) as (url, _bridge):
        result = await sdk_call(url, "legacy", remote_person, {"marker": str(marker)})
    refused(result, "no person decided")
    assert runs(marker) == 0


# -- the operator's policy -------------------------------------------------------------------


@pytest.mark.parametrize("own_executor", [False, True])
async def test_deny_refuses_whatever_the_client_answers(marker: Path, own_executor: bool) -> None:
    """The setting holds for a user's own Executor with our handler too."""
    source: Registry | Executor = person_registry()
    if own_executor:
        source = install_pipeline(Executor(person_registry(), approval_handler=MCPApprovalHandler()))
    async with serving(source, approval_policy="deny") as (url, _bridge):
        result = await sdk_call(url, "legacy", self_approving, {"marker": str(marker)})
    refused(result, "approval policy: deny")
    assert runs(marker) == 0


def test_several_processes_are_told_where_a_person_decides(caplog: pytest.LogCaptureFixture) -> None:
    """Replicas (``redis_url``) keep a desk each: the operator is told to route the page. Workers share theirs."""
    Bridge.build(person_registry(), Settings(redis_url="redis://127.0.0.1:1/0"))
    Bridge.build(person_registry(), Settings())
    Bridge.build(person_registry(), Settings(workers=2))
    warned = [record.getMessage() for record in caplog.records if "route /approvals/" in record.getMessage()]
    assert len(warned) == 1 and "person.wipe" in warned[0], warned


async def test_a_cross_site_or_keyless_post_decides_nothing(marker: Path) -> None:
    """Knowing the link is not enough to decide from another page: the form's key and a same-site request are."""
    posts: list[int] = []

    async def forged_form(params: types.ElicitRequestParams) -> types.ElicitResult:
        path = page_path(link_of(params))
        async with httpx.AsyncClient(base_url=url, timeout=20) as http:
            key = re.search(r'name="form_key" value="([^"]+)"', (await http.get(path)).text)
            assert key is not None
            for data, headers in (
                ({"decision": "approve"}, {}),
                ({"decision": "approve", "form_key": key.group(1)[:-1] + "x"}, {}),
                ({"decision": "approve", "form_key": key.group(1)}, {"sec-fetch-site": "cross-site"}),
            ):
                posts.append((await http.post(path, data=data, headers=headers)).status_code)
        return types.ElicitResult(action="accept")

    async with serving(person_registry(), input_timeout=0.5) as (url, _bridge):
        result = await sdk_call(url, "legacy", forged_form, {"marker": str(marker)})
    assert posts == [404, 404, 403]
    refused(result, "no person decided")
    assert runs(marker) == 0


async def test_audit_arguments_are_masked_when_asked_for(marker: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def person_declines(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert (await decide(url, link_of(params), "decline")).status_code == 200
        return types.ElicitResult(action="accept")

    caplog.set_level(logging.INFO, logger="apcore_mcp.audit")
    async with serving(person_registry(), audit_arguments=True, input_timeout=20) as (url, _bridge):
        await sdk_call(url, "legacy", person_declines, {"marker": str(marker), "password": "hunter2"})
    [audit] = [record.getMessage() for record in caplog.records if record.name == "apcore_mcp.audit"]
    assert '"decision": "declined"' in audit and '"decided_by": "loopback operator"' in audit
    assert "marker" in audit and "hunter2" not in audit  # the arguments, a secret-looking one masked
    assert runs(marker) == 0


async def test_without_an_approval_page_a_person_tool_is_refused_at_once(marker: Path) -> None:
    """In memory (as over stdio) no page is served: the call is refused saying so, not left waiting."""
    bridge = Bridge.build(person_registry(), Settings(input_timeout=300))
    async with Client(bridge.server, mode="legacy", cache=None, elicitation_callback=self_approving_callback) as client:
        result = await asyncio.wait_for(client.call_tool("person.wipe", {"marker": str(marker)}), 20)
    refused(result, "no approval page is served")
    assert runs(marker) == 0


async def test_a_person_tool_run_as_a_task_fails_closed() -> None:
    """A task has no one to send the link to: refused, never run."""
    seen = Seen()
    async with serving(task_executor(seen), approval_policy="person") as (url, _bridge):
        wire = Wire(url)
        created = (await wire.call("jobs.gated", {}))["result"]
        done = (await wire.until_done(created["taskId"]))["result"]
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert "cannot be sent its link" in done["result"]["content"][0]["text"]
    assert seen.finished == 0


@pytest.mark.redis
async def test_with_audit_retention_redis_keeps_the_decisions(tmp_path: Path, marker: Path) -> None:
    async def person_approves(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert (await decide(url, link_of(params), "approve")).status_code == 200
        return types.ElicitResult(action="accept")

    with redis_running(tmp_path / "redis") as redis_server:
        settings = {"redis_url": redis_server.url, "audit_retention": 60.0, "input_timeout": 20}
        async with serving(person_registry(), **settings) as (url, _bridge):
            result = await sdk_call(url, "legacy", person_approves, {"marker": str(marker), "password": "hunter2"})
        store = redis.Redis.from_url(redis_server.url)
        kept, ttl = store.zrange("apcore-mcp:audit", 0, -1), store.ttl("apcore-mcp:audit")
    assert not result.is_error, result
    assert isinstance(kept, list)
    [record] = [json.loads(entry) for entry in kept if isinstance(entry, bytes)]
    assert record["tool"] == "person.wipe" and record["decision"] == "approved" and "arguments" not in record
    assert 0 < ttl <= 60  # the set goes once nothing was decided for a whole retention
