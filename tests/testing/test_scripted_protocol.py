"""The scripted MCP server at the protocol's edges: sealed 2026-07-28 request state, list-change
announcements in both eras, the request record (file and HTTP), Host/Origin protection, and
bad scripts (a clear error naming the file and the field)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from apcore_mcp.testing import scripted_server
from apcore_mcp.testing.clients import read_record
from apcore_mcp.testing.plugin import McpServerFactory
from apcore_mcp.testing.scripted import load_script
from apcore_mcp.testing.scripted.server import RequestRecord

from tests._support.documents import refusal
from tests._support.results import text_of
from tests._support.sessions import Inbox

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "weather.yaml"


async def test_input_required_state_is_sealed_and_checked(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT), "streamable-http")
    async with server.client(era="modern") as client:
        first = await client.session.call_tool("ask_name", {}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests is not None
        request = first.input_requests["user"]
        assert isinstance(request, types.ElicitRequest)
        assert request.params.message == "Who are you?"
        state = first.request_state or ""
        assert state.startswith("v1.")  # sealed by the SDK's RequestStateBoundary, not our plain id
        answer = {"user": types.ElicitResult(action="accept", content={"name": "Eve"})}
        tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
        with pytest.raises(MCPError) as error:
            await client.session.call_tool("ask_name", {}, input_responses=answer, request_state=tampered)
        assert error.value.code == types.INVALID_PARAMS
        missing = await client.session.call_tool("ask_name", {}, request_state=state, allow_input_required=True)
        assert isinstance(missing, types.InputRequiredResult)  # no answer: the same question again
        done = await client.session.call_tool(
            "ask_name", {}, input_responses=answer, request_state=missing.request_state, allow_input_required=True
        )
    assert isinstance(done, types.CallToolResult)
    assert done.structured_content == {"answers": {"user": {"action": "accept", "content": {"name": "Eve"}}}}


@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "sse"])
async def test_list_changed_reaches_handshake_clients(mcp_server: McpServerFactory, transport: str) -> None:
    server = mcp_server(scripted_server(SCRIPT), transport)
    inbox = Inbox()
    async with server.client(message_handler=inbox.handler) as client:
        capabilities = client.server_capabilities
        assert capabilities.tools is not None and capabilities.tools.list_changed is True
        assert capabilities.resources is not None and capabilities.resources.list_changed is True
        assert capabilities.prompts is not None and capabilities.prompts.list_changed is True
        assert text_of(await client.call_tool("announce", {})) == "announced"
        for kind in ("tools", "resources", "prompts"):
            await inbox.wait_for(f"notifications/{kind}/list_changed")


async def test_list_changed_reaches_2026_listeners(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT), "streamable-http")
    async with server.client(era="modern") as client, client.listen(tools_list_changed=True) as subscription:
        await client.call_tool("announce", {})
        with anyio.fail_after(10):
            event = await subscription.__anext__()
    assert "tools" in type(event).__name__.lower()


async def test_request_record_in_file_and_over_http(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT), "streamable-http")
    async with server.client() as client:
        await client.call_tool("forecast", {"city": "Rome"}, meta={"apcore-mcp/testCase": "storm"})
    from_file = server.requests()
    assert [entry["method"] for entry in from_file][:3] == ["initialize", "notifications/initialized", "tools/call"]
    assert [entry["seq"] for entry in from_file] == list(range(1, len(from_file) + 1))
    async with httpx.AsyncClient(base_url=server.base_url or "") as http:
        everything = (await http.get("/requests")).json()
        storm = (await http.get("/requests", params={"test_case": "storm"})).json()
        calls = (await http.get("/requests", params={"method": "tools/call"})).json()
    assert [e["method"] for e in everything] == [e["method"] for e in from_file]
    assert [e["method"] for e in calls] == ["tools/call"] and server.requests(method="tools/call") == calls
    assert len(storm) == 1
    assert storm[0]["params"]["arguments"] == {"city": "Rome"}
    assert storm[0]["params"]["_meta"]["apcore-mcp/testCase"] == "storm"
    assert storm[0]["protocol_version"] == "2025-11-25"


def test_the_record_numbers_every_request_past_the_entries_it_keeps(tmp_path: Path) -> None:
    record = RequestRecord(tmp_path / "record.jsonl", limit=2)
    for _ in range(4):
        record.add("ping", None)
    record.close()
    assert [e["seq"] for e in record.entries()] == [1, 2]
    assert [e["seq"] for e in read_record(tmp_path / "record.jsonl")] == [1, 2, 3, 4]


async def test_http_routes_refuse_foreign_hosts_and_origins(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT), "sse")
    async with httpx.AsyncClient(base_url=server.base_url or "") as http:
        assert (await http.get("/health")).json()["status"] == "ok"
        assert (await http.get("/health", headers={"Host": "evil.example"})).status_code == 421
        assert (await http.get("/requests", headers={"Origin": "http://evil.example"})).status_code == 403
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert (await http.post("/mcp", json=body, headers={"Host": "evil.example:80"})).status_code == 421


BAD_SCRIPTS = [
    ("tools: [{description: no name}]", "tools[0].name: required field is missing"),
    (
        "tools: [{name: t, responses: [{content: [{type: video}]}]}]",
        "tools[0].responses[0].content[0].type: unknown content type 'video'",
    ),
    (
        "tools: [{name: t, responses: [{content: [{type: text, txt: hi}]}]}]",
        "tools[0].responses[0].content[0].txt: unknown field",
    ),
    ("tools: [{name: t, responses: [{error: {code: x, message: m}}]}]", "tools[0].responses[0].error.code:"),
    ("tools: [{name: t, responses: [{delay_ms: -1}]}]", "tools[0].responses[0].delay_ms: must be >= 0"),
    (
        "tools: [{name: t, responses: [{list_changed: [widgets]}]}]",
        "tools[0].responses[0].list_changed: unknown list 'widgets'",
    ),
    (
        "tools: [{name: t, responses: [{input: [{k: {ask: {}}}]}]}]",
        "tools[0].responses[0].input[0].k.ask: unknown field",
    ),
    ("tools: [{name: t}, {name: t}]", "tools[1]: 't' is declared twice"),
    ("resources: [{uri: 'x://y', name: y}]", "resources[0]: give exactly one of 'text' or 'blob'"),
    ("toolz: []", "toolz: unknown field"),
    ("tools: {name: t}", "tools: expected a list, got a mapping"),
]


@pytest.mark.parametrize(("text", "message"), BAD_SCRIPTS)
def test_a_bad_script_names_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(load_script, tmp_path / "bad.yaml", text).startswith(message)


def test_the_cli_refuses_a_bad_script_with_exit_code_2(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("tools:\n  - name: t\n    responses: [{is_error: maybe}]\n")
    done = subprocess.run(
        [sys.executable, "-m", "apcore_mcp.testing.scripted", str(script), "--transport", "stdio"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"error: {script}: tools[0].responses[0].is_error: Input should be a valid boolean, unable to interpret input"
    )
