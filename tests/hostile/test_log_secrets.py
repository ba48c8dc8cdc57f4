"""No credential in any log line at any level, however the service is started.

The service runs as a process started the documented ``uvicorn`` way (docs/service.md; its access log on, as the
page writes the command), the CLI way and the Dockerfile's way (its CMD and ENV), with API-key auth, an upstream whose URL and
headers take a ``${VAR}``, and logging at DEBUG everywhere. Clients then put secrets where
logs look: a refused ``?access_token=``, other query strings, a wrong and a right bearer
token, ``requestState`` in a 2026-07-28 call and in a legacy SSE message (whose body the SDK
prints at DEBUG). Everything the process wrote must hold none of them, and must show that
those requests were logged (masked), not that nothing was.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import httpx
import pytest
from apcore import Registry

from tests._support.auth import api_key_entry
from tests._support.hostile import ACCEPT, INIT, modern_headers, serving, sse_data, tool_call
from tests._support.log_capture import every_record
from tests._support.services import STYLES, TOOL, service
from tests._support.sessions import Inbox, call_text, open_session

GOOD_KEY = "good-api-key-7f3c9e1a5b2d4c6e8f0a"
BAD_TOKEN = "bad-bearer-token-2b4d6f8a0c1e3g5h"
QUERY_TOKEN = "query-access-token-9a8b7c6d5e4f"
QUERY_KEY = "query-api-key-1q2w3e4r5t6y"
STATE_MODERN = "request-state-modern-0p9o8i7u6y5t"
STATE_SSE = "request-state-sse-z1x2c3v4b5n6m7"
UPSTREAM_TOKEN = "upstream-env-token-4r5t6y7u8i9o"
SECRETS = [GOOD_KEY, BAD_TOKEN, QUERY_TOKEN, QUERY_KEY, STATE_MODERN, STATE_SSE, UPSTREAM_TOKEN]


def settings(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "mcp.json"
    remote = {
        "url": "http://127.0.0.1:9/mcp?token=${UPSTREAM_TOKEN}",  # port 9: nothing listens, it fails at once
        "headers": {"Authorization": "Bearer ${UPSTREAM_TOKEN}"},
        "timeout": 5,
    }
    config.write_text(json.dumps({"mcpServers": {"remote": remote}}))
    return {
        "APCORE_MCP_AUTH": "api-key",
        "APCORE_MCP_AUTH_API_KEYS": api_key_entry(GOOD_KEY, "alice"),
        "APCORE_MCP_LOG_LEVEL": "DEBUG",
        "APCORE_MCP_PUBLIC_URL": "http://127.0.0.1:8000",  # the image binds 0.0.0.0: auth needs it
        "APCORE_MCP_CONFIG": str(config),
        "UPSTREAM_TOKEN": UPSTREAM_TOKEN,
        "PYTHONUNBUFFERED": "1",
    }


async def send_secrets(url: str) -> None:
    good = {"Authorization": f"Bearer {GOOD_KEY}"}
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{url}/mcp?access_token={QUERY_TOKEN}")).status_code == 400
        assert (await http.get(f"{url}/openai/tools?strict=true&api_key={QUERY_KEY}")).status_code == 401
        wrong = await http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {BAD_TOKEN}"})
        assert wrong.status_code == 401
        body = tool_call(1, TOOL, {"text": "a b"}, modern=True)
        body["params"]["requestState"] = STATE_MODERN
        answer = await http.post(f"{url}/mcp", json=body, headers={**modern_headers("tools/call", TOOL), **good})
        assert "requestState" in answer.text  # refused: it was not sealed by this server
        async with http.stream("GET", f"{url}/sse", headers=good) as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()  # held open (not closed by leaving a loop) until the POST is answered
            endpoint = await sse_data(lines, "/messages/")
            message = {**INIT, "params": {**INIT["params"], "requestState": STATE_SSE}}
            posted = await http.post(f"{url}{endpoint}", json=message, headers=good)
            assert posted.status_code == 202, posted.text
            assert '"protocolVersion"' in await sse_data(lines, '"id":0')  # answered on the stream


@pytest.mark.parametrize("style", STYLES)
async def test_no_secret_reaches_any_log_line(style: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    extra = ["--log-level", "debug"] if style == "readme" else []  # uvicorn's own; the CLI's is APCORE_MCP_LOG_LEVEL
    with service(style, log, settings(tmp_path), extra) as (url, _):
        await send_secrets(url)
    text = log.read_text(errors="replace")
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"in the {style} service's log: {leaked}\n" + "\n".join(
        line for line in text.splitlines() if any(secret in line for secret in leaked)
    )
    # the requests were logged, masked: not merely left out
    assert "Refused a bearer token on /mcp" in text
    assert "Received JSON" in text and '"requestState":"***"' in text.replace(" ", "")  # the SDK's DEBUG dump
    assert "Upstream server 'remote' not mounted" in text or "Upstream 'remote'" in text
    if style == "readme":  # the documented command (docs/service.md) keeps uvicorn's access log
        assert "GET /mcp?access_token=*** HTTP/1.1" in text
        assert "GET /openai/tools?strict=true&api_key=*** HTTP/1.1" in text


# -- the masking itself, in process ------------------------------------------------------------

MASKED = [
    ('127.0.0.1:5 - "GET /mcp?access_token=S3CR3T&strict=true HTTP/1.1" 400', "access_token=***&strict=true"),
    ("GET /openai/tools?tags=a&prefix=b&key=S3CR3T", "?tags=a&prefix=b&key=***"),
    ("POST /messages/?session_id=S3CR3T", "session_id=***"),
    ("(b'authorization', b'Bearer S3CR3T-0123456789')", "b'Bearer ***'"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: ***"),
    ('b\'{"params":{"requestState":"S3CR3T","name":"x"}}\'', '"requestState":"***","name":"x"'),
    ("params={'requestState': 'S3CR3T', 'x': 1}", "'requestState': '***', 'x': 1"),
    ("request_state='S3CR3T'", "request_state='***'"),
    ('"{\\"requestState\\":\\"S3CR3T\\"}"', '\\"requestState\\":\\"***\\"'),
    ("api_key=S3CR3T password: 'S3CR3T'", "api_key=*** password: '***'"),
]
KEPT = [
    "Refused a bearer token on /mcp: The API key is not valid",
    'tools/call "progressToken": 5, "code": -32010',
    "Is it there? yes",
]


@pytest.mark.parametrize(("text", "shown"), MASKED)
def test_secrets_are_masked_wherever_they_sit(text: str, shown: str) -> None:
    from apcore_mcp._redaction import redact

    masked = redact(text)
    assert "S3CR3T" not in masked and "dXNlcjpwYXNzd29yZA" not in masked
    assert shown in masked
    assert redact(masked) == masked


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_left_alone(text: str) -> None:
    from apcore_mcp._redaction import redact

    assert redact(text) == text


def test_an_access_log_record_keeps_its_arguments() -> None:
    from apcore_mcp._redaction import LogRedaction

    args = ("127.0.0.1:5", "GET", "/mcp?access_token=S3CR3T", "1.1", 400)
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None)
    assert LogRedaction().filter(record)
    assert record.args == (
        "127.0.0.1:5",
        "GET",
        "/mcp?access_token=***",
        "1.1",
        400,
    )  # uvicorn's formatter unpacks five


def test_a_traceback_is_masked_too() -> None:
    from apcore_mcp._redaction import LogRedaction

    try:
        raise ValueError("GET http://upstream/mcp?token=S3CR3T failed")
    except ValueError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "failed: %s", ("Bearer S3CR3T-0123456789",), sys.exc_info()
        )
    LogRedaction().filter(record)
    text = logging.Formatter().format(record)
    assert "S3CR3T" not in text and "token=***" in text and "Bearer ***" in text


def test_a_record_is_masked_once_however_many_filters_it_meets(monkeypatch: pytest.MonkeyPatch) -> None:
    from apcore_mcp import _redaction as redaction

    scans: list[str] = []
    real = redaction.redact

    def counted(text: str) -> str:
        scans.append(text)
        return real(text)

    monkeypatch.setattr(redaction, "redact", counted)
    record = logging.LogRecord("x", logging.DEBUG, __file__, 1, "Received %s", ("api_key=S3CR3T",), None)
    assert redaction.LogRedaction().filter(record) and scans
    first = len(scans)
    # then on its handler, and again under the other of the CLI's and the lifespan's RedactedLogs
    assert all(redaction.LogRedaction().filter(record) for _ in range(3))
    assert len(scans) == first  # no second scan (a 1 MB DEBUG dump takes ~90 ms a scan)
    assert record.getMessage() == "Received api_key=***"


# -- an upstream's own secret, echoed back, in every record of every logger -------------------------

OWN_SECRET = "upstream-own-secret-5t6y7u8i9o0p"
TELLER = """
import os, anyio, mcp.types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
async def tools(ctx, params):
    return t.ListToolsResult(tools=[t.Tool(name="tell", description="Its own secret", input_schema={"type": "object"})])
async def call(ctx, params):
    return t.CallToolResult(content=[t.TextContent(text="mine: " + os.environ["TELLER_SECRET"])])
async def main():
    server = Server("teller", on_list_tools=tools, on_call_tool=call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
"""
"""A stdio upstream (a real MCP server) whose one tool answers with the secret its config gave it."""


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_an_upstream_echoing_its_own_secret_leaves_it_in_no_record(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "mcp.json"
    teller = {"command": sys.executable, "args": ["-c", TELLER], "env": {"TELLER_SECRET": "${UP_OWN_SECRET}"}}
    config.write_text(json.dumps({"mcpServers": {"teller": teller}}))
    monkeypatch.setenv("UP_OWN_SECRET", OWN_SECRET)
    with every_record() as seen:
        async with serving(Registry(), mcp_config=str(config)) as (url, _bridge):
            async with open_session(transport, url, Inbox()) as client:
                text, is_error = await call_text(client, "teller.tell")
    assert (text, is_error) == (f"mine: {OWN_SECRET}", False)  # the caller gets it: only logs are masked
    leaked = [f"{record.name}: {record.getMessage()}" for record in seen.records if OWN_SECRET in record.getMessage()]
    leaked += [line for line in seen.rendered if OWN_SECRET in line]
    assert not leaked, "\n".join(leaked)
    chunks = [record.getMessage() for record in seen.records if record.name == "sse_starlette.sse"]
    assert any("mine: ***" in chunk for chunk in chunks), chunks  # the answer's chunk was logged, masked


def test_every_record_is_masked_whoever_logs_it_and_however_it_spells_the_secret() -> None:
    from apcore_mcp.upstream.expand import Redactor, install_filter, remove_filter

    secret = 'sq"uote\\d-é-4r5t'
    flt = install_filter(Redactor([secret]))
    try:
        # a logger and a handler that did not exist when masking began, and no filter on either
        late = logging.getLogger(f"late.third_party.{id(flt)}")
        late.propagate = False
        with every_record() as seen:
            late.addHandler(seen)
            late.debug("as is %s", secret)
            late.debug("chunk: %s", json.dumps({"text": secret}).encode())  # a JSON event's bytes, as streamed
            late.debug("chunk: %r", json.dumps({"text": secret}, ensure_ascii=False))
            late.debug("%s:%s", "kept", 5)
            late.removeHandler(seen)
    finally:
        remove_filter(flt)
    assert len(seen.rendered) == 4 and seen.rendered[-1].endswith("kept:5")
    for line in seen.rendered:
        assert "uote" not in line, line
    assert seen.records[-1].args == ("kept", 5)  # nothing to mask: the arguments stay for the formatter
    after = logging.getLogRecordFactory()("x", logging.DEBUG, __file__, 1, "%s", (secret,), None)
    assert after.getMessage() == secret  # masking ended with remove_filter
