"""Legacy SSE ``/messages/``: a client's malformed body is a 4xx with a clear JSON error and at most one
DEBUG line, never an ERROR with a traceback (as on ``/mcp``); the session goes on serving after it.

A real SSE session (raw HTTP, as any client holding one can send anything) on the app under uvicorn,
every logger of the process captured at DEBUG.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator

import httpx

from tests._support.hostile import INIT, open_session, serving, session_headers, sse_data
from tests._support.log_capture import every_record

MAX_BODY = 64 * 1024
MALFORMED: list[bytes] = [
    b"not json",
    b"{",
    b"",
    b"\xff\xfe\x00",
    b"null",
    b"42",
    b'"text"',
    b"[]",
    b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    b"{}",
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","id":1}',
    b'{"jsonrpc":"2.0","id":1,"method":5}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}',
    b'{"jsonrpc":"2.0","id":1,"result":1}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}',
    b"[" * 200 + b"]" * 200,  # deeper than the JSON bounds
    b'{"jsonrpc":"2.0","id":1,"method":"' + b"x" * MAX_BODY + b'"}',  # over max_body_bytes
]
CLIENT_LOGGERS = ("httpx", "httpcore")
"""The test's own HTTP client logs each request too: not the server's words."""


async def _answered(http: httpx.AsyncClient, endpoint: str, lines: AsyncIterator[str], request_id: int) -> None:
    """A ``ping`` sent and its answer read from the stream: what the session was sent before is handled."""
    assert (await http.post(endpoint, json={"jsonrpc": "2.0", "id": request_id, "method": "ping"})).status_code == 202
    await sse_data(lines, f'"id":{request_id}')


def _servers(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [record for record in records if record.name.split(".")[0] not in CLIENT_LOGGERS]


async def test_malformed_messages_are_4xx_and_quiet_and_the_session_goes_on() -> None:
    assert len(MALFORMED) == 20
    with every_record() as seen:
        async with serving(max_body_bytes=MAX_BODY) as (url, _bridge), httpx.AsyncClient(timeout=10) as http:
            async with http.stream("GET", f"{url}/sse") as stream:
                lines = stream.aiter_lines()
                endpoint = f"{url}{await sse_data(lines, '/messages/')}"
                assert (await http.post(endpoint, json=INIT)).status_code == 202
                await sse_data(lines, '"id":0')
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert (await http.post(endpoint, json=initialized)).status_code == 202
                await _answered(http, endpoint, lines, 90)  # the notification has been handled (and logged)
                before = len(seen.records)
                per_body: list[list[logging.LogRecord]] = []
                answers: list[httpx.Response] = []
                unnamed: list[httpx.Response] = []
                for body in MALFORMED:
                    mark = len(seen.records)
                    answer = await http.post(endpoint, content=body, headers={"Content-Type": "application/json"})
                    assert 400 <= answer.status_code < 500, (body[:60], answer.status_code, answer.text)
                    answers.append(answer)
                    per_body.append(_servers(seen.records[mark:]))
                for query in ("", "?session_id=not-a-session"):  # no session named: the same, before any session
                    mark = len(seen.records)
                    answer = await http.post(f"{url}/messages/{query}", json=INIT)
                    assert answer.status_code == 400, answer.text
                    unnamed.append(answer)
                    per_body.append(_servers(seen.records[mark:]))
                mark = len(seen.records)  # a session that is not open (a stale id): 404, quiet too
                stale = await http.post(f"{url}/messages/?session_id={uuid.uuid4().hex}", json=INIT)
                assert stale.status_code == 404, stale.text
                assert "Could not find session" in stale.json()["error"]["message"], stale.text
                per_body.append(_servers(seen.records[mark:]))
                listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                assert (await http.post(endpoint, json=listing)).status_code == 202
                tools = json.loads(await sse_data(lines, '"id":1'))
                bad_phase = _servers(seen.records[before:])
    assert tools["result"]["tools"], tools  # a well-formed message still works after them
    shown = "\n".join(f"{r.levelname} {r.name}: {r.getMessage()[:160]}" for r in bad_phase)
    assert not [r for r in bad_phase if r.levelno >= logging.WARNING], shown
    assert not [r for r in bad_phase if r.exc_info or r.exc_text], shown
    assert all(len(records) <= 1 for records in per_body), shown
    for body, answer in zip(MALFORMED, answers, strict=True):  # each says what is wrong, in JSON
        assert answer.headers.get("content-type") == "application/json", (body[:60], answer.text)
        assert answer.json()["error"], (body[:60], answer.text)
    assert all("session_id" in answer.json()["error"]["message"] for answer in unnamed), [a.text for a in unnamed]


async def test_the_same_bodies_on_mcp_are_4xx_and_quiet_too() -> None:
    async with serving(max_body_bytes=MAX_BODY) as (url, _bridge), httpx.AsyncClient(timeout=10) as http:
        session = await open_session(http, url)
        with every_record() as seen:
            per_body: list[list[logging.LogRecord]] = []
            for body in MALFORMED:
                mark = len(seen.records)
                answer = await http.post(f"{url}/mcp", content=body, headers=session_headers(session))
                assert 400 <= answer.status_code < 500, (body[:60], answer.status_code, answer.text)
                assert answer.json()["error"], (body[:60], answer.text)
                per_body.append(_servers(seen.records[mark:]))
    records = [record for records in per_body for record in records]
    shown = "\n".join(f"{r.levelname} {r.name}: {r.getMessage()[:160]}" for r in records)
    assert all(len(records) <= 1 and all(r.levelno == logging.DEBUG for r in records) for records in per_body), shown
    assert not [r for r in records if r.exc_info or r.exc_text], shown
