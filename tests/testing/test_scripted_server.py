"""The scripted MCP server driven by the Python SDK client, on stdio, Streamable HTTP and SSE,
in both protocol eras: declarations, every content type, turn order per test case, the in-band
directive mode, errors, progress and input requests (elicitation and sampling)."""

from __future__ import annotations

import base64
import contextlib
import json
from pathlib import Path
from typing import Any, Literal, cast

import mcp.types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.testing import TEST_CASE_META, RunningServer, encode_responses, scripted_server
from apcore_mcp.testing.plugin import McpServerFactory

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "weather.yaml"
VARIANTS = [
    ("stdio", "legacy"),
    ("stdio", "modern"),
    ("streamable-http", "legacy"),
    ("streamable-http", "modern"),
    ("sse", "legacy"),
]


def request_meta(entries: dict[str, Any]) -> types.RequestParamsMeta:
    """Request ``_meta`` with keys of our own: an open map (PEP 728 ``extra_items``) that mypy reads as closed."""
    return cast(types.RequestParamsMeta, entries)


class Variant:
    def __init__(self, server: RunningServer, era: str) -> None:
        self.server, self.era = server, era

    def client(self, **options: Any) -> contextlib.AbstractAsyncContextManager[Client]:
        return self.server.client(era=self.era, **options)


IDS = [t if e == "legacy" else f"{t}-modern" for t, e in VARIANTS]


@pytest.fixture(params=VARIANTS, ids=IDS)
def scripted(request: pytest.FixtureRequest, mcp_server: McpServerFactory) -> Variant:
    """A fresh server for tests that play single turns."""
    transport, era = request.param
    return Variant(mcp_server(scripted_server(SCRIPT), transport), era)


@pytest.fixture(params=VARIANTS, ids=IDS)
def shared(request: pytest.FixtureRequest, mcp_server: McpServerFactory) -> Variant:
    """A server shared by this module's tests that consume no scripted turn (or only their own)."""
    transport, era = request.param
    return Variant(mcp_server(scripted_server(SCRIPT), transport, scope="module"), era)


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def test_declarations_reach_the_client(shared: Variant) -> None:
    async with shared.client() as client:
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("scripted-weather", "2.0.0")
        assert client.instructions == "A scripted server for the tests"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == ["forecast", "media", "slow", "ask_name", "two_rounds", "announce", "get_data"]
        forecast = tools["forecast"]
        assert forecast.description == "Weather forecast for a city"
        assert forecast.input_schema["required"] == ["city"]
        assert forecast.annotations is not None
        assert forecast.annotations.read_only_hint is True
        assert forecast.annotations.title == "Forecast"
        assert tools["get_data"].input_schema["required"] == ["task_description"]

        resources = (await client.list_resources()).resources
        assert [(str(r.uri), r.mime_type) for r in resources] == [
            ("test://doc", "text/plain"),
            ("test://logo", "image/png"),
        ]
        doc = (await client.read_resource("test://doc")).contents[0]
        assert isinstance(doc, types.TextResourceContents)
        assert doc.text == "a document"
        logo = (await client.read_resource("test://logo")).contents[0]
        assert isinstance(logo, types.BlobResourceContents)
        assert base64.b64decode(logo.blob) == b"\x89PNG\r\n\x1a\n"
        with pytest.raises(MCPError) as missing:
            await client.read_resource("test://nothing")
        assert missing.value.code == types.INVALID_PARAMS

        prompt = (await client.list_prompts()).prompts[0]
        assert (prompt.name, [a.name for a in prompt.arguments or []]) == ("greet", ["who"])
        message = (await client.get_prompt("greet", {"who": "Ada"})).messages[0]
        assert isinstance(message.content, types.TextContent)
        assert message.content.text == "Say hello to Ada"


async def test_every_content_type(scripted: Variant) -> None:
    async with scripted.client() as client:
        result = await client.call_tool("media", {})
    image, audio, embedded, link = result.content[1:]
    assert [block.type for block in result.content] == ["text", "image", "audio", "resource", "resource_link"]
    assert texts(result) == ["hello"]
    assert isinstance(image, types.ImageContent)
    assert (image.mime_type, image.data) == ("image/png", "iVBORw0KGgo=")
    assert isinstance(audio, types.AudioContent)
    assert (audio.mime_type, audio.data) == ("audio/wav", "UklGRg==")
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert (str(embedded.resource.uri), embedded.resource.text) == ("test://doc", "embedded")
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.name, link.mime_type) == ("test://doc", "doc", "text/plain")
    assert result.meta is not None
    assert result.meta["trace_id"] == "abc"
    assert result.is_error is False


async def test_turns_play_in_order_per_test_case(scripted: Variant) -> None:
    async with scripted.client() as client:
        first = await client.call_tool("forecast", {"city": "Oslo"})
        storm = await client.call_tool("forecast", {"city": "Oslo"}, meta=request_meta({TEST_CASE_META: "storm"}))
        second = await client.call_tool("forecast", {"city": "Oslo"})
        with pytest.raises(MCPError) as error:  # the storm case's second turn, chosen by a directive
            await client.call_tool("forecast", {"city": "[test_case_id=storm] Oslo"})
        exhausted = await client.call_tool("forecast", {"city": "Oslo"})
    assert (texts(first), first.structured_content) == (["sunny"], {"sky": "sunny", "temp_c": 21})
    assert (texts(storm), storm.is_error) == (["storm warning"], True)
    assert (texts(second), second.structured_content, second.is_error) == (["rainy"], None, False)
    assert (error.value.code, error.value.message, error.value.data) == (-32603, "backend down", {"retry_after_s": 5})
    assert exhausted.is_error is True
    assert (
        "'forecast' in test case 'default' was called more often than scripted (2 response(s))" in texts(exhausted)[0]
    )
    if scripted.server.transport == "stdio":
        return  # each stdio connection is a new process: the record holds this one
    calls = scripted.server.requests("tools/call")
    assert [c["test_case"] for c in calls] == ["default", "storm", "default", "storm", "default"]


async def test_unknown_tool_is_a_protocol_error(shared: Variant) -> None:
    async with shared.client() as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("nowhere", {})
    assert error.value.code == types.INVALID_PARAMS
    assert "nowhere" in error.value.message


def directive(case_id: str, turns: list[dict[str, Any]] | None) -> str:
    text = f"Please fetch the data. [test_case_id={case_id}]"
    return text + (f" [mcp_responses_json={encode_responses(turns)}]" if turns is not None else "")


async def test_in_band_directives_queue_responses_per_test_case(shared: Variant) -> None:
    one: list[dict[str, Any]] = [
        {"content": [{"type": "text", "text": "first"}], "structured_content": {"n": 1}},
        {"content": [{"type": "image", "data": "AAAA", "mime_type": "image/gif"}]},
    ]
    other: list[dict[str, Any]] = [{"is_error": True, "content": [{"type": "text", "text": "other case"}]}]
    a, b = f"a-{shared.era}", f"b-{shared.era}"  # the module's server is shared by both eras
    async with shared.client() as client:

        async def call(text: str) -> types.CallToolResult:
            return await client.call_tool("get_data", {"task_description": text})

        a1 = await call(directive(a, one))
        b1 = await call(directive(b, other))
        a2 = await call(directive(a, one))  # the same directive again keeps its place in the queue
        a3 = await call(directive(a, None))
        bad = await call("[test_case_id=c] [mcp_responses_json=" + base64.b64encode(b'[{"content": 5}]').decode() + "]")
    assert (texts(a1), a1.structured_content) == (["first"], {"n": 1})
    assert (texts(b1), b1.is_error) == (["other case"], True)
    assert [(b.type, getattr(b, "mime_type", None)) for b in a2.content] == [("image", "image/gif")]
    assert a3.is_error is True
    assert f"'get_data' in test case '{a}' was called more often than scripted (2 response(s))" in texts(a3)[0]
    assert bad.is_error is True
    assert texts(bad) == ["scripted server: mcp_responses_json (test case c): [0].content: expected a list, got int"]


async def test_progress_comes_before_the_result(scripted: Variant) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with scripted.client() as client:
        result = await client.call_tool("slow", {}, progress_callback=on_progress)
    assert texts(result) == ["done"]
    assert seen == [(1.0, 3.0, "one"), (2.0, 3.0, None), (3.0, 3.0, None)]


class Answers:
    """The client side of input requests: what it was asked, and what it answers."""

    def __init__(self, action: Literal["accept", "decline", "cancel"] = "accept") -> None:
        self.action = action
        self.asked: list[str] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        content: dict[str, Any] | None = {"name": "Ada", "a": "x"} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)

    async def sample(self, _ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append(f"sample max_tokens={params.max_tokens}")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="brief"), model="test-model")


async def test_elicitation_and_sampling_answers_reach_the_result(scripted: Variant) -> None:
    answers = Answers()
    async with scripted.client(elicitation_callback=answers.elicit, sampling_callback=answers.sample) as client:
        named = await client.call_tool("ask_name", {})
        both = await client.call_tool("two_rounds", {})
    assert named.structured_content == {"answers": {"user": {"action": "accept", "content": {"name": "Ada", "a": "x"}}}}
    assert both.structured_content is not None
    assert both.structured_content["answers"]["second"]["content"] == {"type": "text", "text": "brief"}
    assert json.loads(texts(both)[0]) == both.structured_content
    assert answers.asked == ["Who are you?", "First?", "sample max_tokens=20"]
    if scripted.server.transport == "stdio":
        return
    calls = scripted.server.requests("tools/call")
    retried = [c["params"] for c in calls if "requestState" in c["params"]]
    if scripted.era == "modern":  # 2026-07-28: input-required rounds, each retried with a sealed state
        assert [list(p["inputResponses"]) for p in retried] == [["user"], ["first"], ["second"]]
        assert all(p["requestState"].startswith("v1.") for p in retried)
    else:  # the handshake era asks on the call's own stream instead
        assert retried == []
        assert len(calls) == 2


async def test_a_declined_elicitation_plays_on_decline(scripted: Variant) -> None:
    async with scripted.client(elicitation_callback=Answers("decline").elicit) as client:
        result = await client.call_tool("ask_name", {})
    assert (texts(result), result.is_error) == (["no name given"], True)
