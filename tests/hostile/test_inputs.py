"""Malformed input found by the attack run: each answers a clear 4xx JSON error, nothing 500s or hangs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests._support.hostile import (
    ACCEPT,
    HANDSHAKE,
    INIT,
    MODERN,
    modern_headers,
    open_session,
    serving,
    session_headers,
    tool_call,
)

ROUTES = [("GET", "/health"), ("POST", "/mcp"), ("GET", "/openai/tools"), ("GET", "/metrics"), ("GET", "/explorer/")]


async def test_a_malformed_origin_is_403_json_on_every_route(caplog: pytest.LogCaptureFixture) -> None:
    async with serving(explorer=True) as (url, _), httpx.AsyncClient() as http:
        for method, path in ROUTES:
            response = await http.request(method, f"{url}{path}", headers={**ACCEPT, "Origin": "http://["})
            assert (response.status_code, response.json()) == (403, {"error": "Invalid Origin header"}), path
        assert (await http.get(f"{url}/health")).status_code == 200
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


async def test_host_and_origin_are_case_insensitive_on_every_route() -> None:
    async with serving(explorer=True) as (url, _), httpx.AsyncClient() as http:
        port = url.rsplit(":", 1)[1]
        upper = {"Host": f"LOCALHOST:{port}", "Origin": f"HTTP://LocalHost:{port}"}
        assert (await http.get(f"{url}/health", headers=upper)).status_code == 200
        assert (await http.get(f"{url}/explorer/", headers=upper)).status_code == 200
        mcp = await http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **upper})
        assert mcp.status_code == 200, mcp.text  # the SDK's own check used to answer 421 here
        assert (await http.get(f"{url}/health", headers={"Host": "EVIL.example"})).status_code == 421


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], 1.5, True, None], ids=["object", "array", "float", "bool", "null"])
@pytest.mark.parametrize("era", [HANDSHAKE, MODERN])
async def test_a_request_id_that_is_not_a_string_or_integer_gets_an_error(era: str, bad_id: object) -> None:
    async with serving() as (url, _), httpx.AsyncClient() as http:
        if era == HANDSHAKE:
            headers = session_headers(await open_session(http, url))
            body = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
        else:
            headers = modern_headers("tools/call", "hostile.echo")
            body = {**tool_call(1, "hostile.echo", {}, modern=True), "id": bad_id}
        response = await http.post(f"{url}/mcp", json=body, headers=headers)
    assert response.status_code == 400, response.text  # was 202 with no reply at all
    answer = response.json()
    assert (answer["error"]["code"], answer["id"]) == (-32600, None)


@pytest.mark.parametrize("resumable", [False, True])
async def test_get_with_an_unknown_last_event_id_is_answered(resumable: bool) -> None:
    async with serving(resumable=resumable) as (url, _), httpx.AsyncClient(timeout=5) as http:
        session_id = await open_session(http, url)
        headers = {"Accept": "text/event-stream", "mcp-session-id": session_id, "mcp-protocol-version": HANDSHAKE}
        async with http.stream("GET", f"{url}/mcp", headers={**headers, "Last-Event-ID": "no-such-event"}) as stream:
            assert stream.status_code == 200  # was 500 without an event store (nothing to resume from)
            assert stream.headers["content-type"].startswith("text/event-stream")


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def explorer_call(arguments_json: str) -> bytes:
    """A 2026-07-28 tools/call of hostile.echo whose arguments are ``arguments_json``, as sent."""
    call = json.dumps(tool_call(1, "hostile.echo", {}, modern=True)).replace('"arguments": {}', '"arguments": %s')
    return (call % arguments_json).encode()


@pytest.mark.parametrize("depth", [65, 900, 1_000, 5_000])
async def test_deeply_nested_explorer_arguments_are_400_and_the_connection_stays_usable(depth: int) -> None:
    async with (
        serving(explorer=True, allow_execute=True) as (url, _),
        httpx.AsyncClient(limits=httpx.Limits(max_connections=1)) as http,
    ):
        response = await http.post(
            f"{url}/explorer/mcp",
            content=explorer_call(f'{{"x": {nested(depth)}}}'),
            headers=modern_headers("tools/call", "hostile.echo"),
        )
        assert response.status_code == 400
        assert "nested" in response.json()["error"]["message"]
        assert response.headers.get("connection") != "close"
        assert (await http.get(f"{url}/health")).status_code == 200  # the kept-alive connection answers


async def test_a_call_nested_64_deep_in_all_still_runs() -> None:
    """The message (1), its params (2), the arguments (3) and 61 levels in ``x``: 64, the bound."""
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient() as http:
        response = await http.post(
            f"{url}/explorer/mcp",
            content=explorer_call(f'{{"x": {nested(61)}}}'),
            headers=modern_headers("tools/call", "hostile.echo"),
        )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert (result["isError"], json.loads(result["content"][0]["text"])) == (False, {"ok": True})


@pytest.mark.parametrize("path", ["/mcp", "/messages/", "/explorer/mcp"])
async def test_bodies_over_the_limit_are_413_declared_or_chunked(path: str) -> None:
    async with serving(explorer=True, allow_execute=True, max_body_bytes=4096) as (url, _):
        async with httpx.AsyncClient() as http:
            declared = await http.post(f"{url}{path}", content=b"x" * 5000, headers=ACCEPT)

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(10):
                    yield b"x" * 1000

            chunked = await http.post(f"{url}{path}", content=chunks(), headers=ACCEPT)
            assert (await http.get(f"{url}/health")).status_code == 200
    for response in (declared, chunked):
        assert response.status_code == 413
        assert response.json() == {"error": "Request body exceeds 4096 bytes"}


async def test_mcp_over_http_rejects_garbage_with_4xx_and_stays_up() -> None:
    async with serving() as (url, _), httpx.AsyncClient() as http:
        session = session_headers(await open_session(http, url))
        cases = [b"{not json", b"[]", b"[1,2]", b"42", json.dumps({"jsonrpc": "2.0", "id": 1}).encode()]
        for body in cases * 20:
            response = await http.post(f"{url}/mcp", content=body, headers=session)
            assert 400 <= response.status_code < 500, (body, response.status_code, response.text)
        form = {**session, "Content-Type": "application/x-www-form-urlencoded"}
        assert (await http.post(f"{url}/mcp", content=b"a=1", headers=form)).status_code in (400, 415)
        assert (await http.get(f"{url}/health")).status_code == 200
