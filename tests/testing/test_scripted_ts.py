"""The scripted MCP server driven by the official TypeScript SDK client (tests/_support/ts-client.mjs)
on stdio, Streamable HTTP and SSE: declarations, content types, turn order per test case, the
in-band directive mode, errors, progress, elicitation and sampling, and the request record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apcore_mcp.testing import TEST_CASE_META, RunningServer, encode_responses, scripted_server
from apcore_mcp.testing.plugin import McpServerFactory

from tests._support.node import EXIT_TOOL_ERROR, run_ts_client

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "weather.yaml"
TRANSPORTS = ["stdio", "streamable-http", "sse"]

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]


@pytest.fixture(params=TRANSPORTS)
def server(request: pytest.FixtureRequest, mcp_server: McpServerFactory) -> RunningServer:
    return mcp_server(scripted_server(SCRIPT), request.param)


def test_lists_what_the_script_declares(server: RunningServer) -> None:
    run = run_ts_client(server, "--list")
    assert run.returncode == 0, run
    report = run.report
    assert report["server"] == {"name": "scripted-weather", "version": "2.0.0"}
    assert report["instructions"] == "A scripted server for the tests"
    assert report["capabilities"]["tools"] == {"listChanged": True}
    tools = {tool["name"]: tool for tool in report["tools"]}
    assert list(tools) == ["forecast", "media", "slow", "ask_name", "two_rounds", "announce", "get_data"]
    assert tools["forecast"]["annotations"] == {
        "readOnlyHint": True,
        "title": "Forecast",
    }  # snake_case YAML, camelCase wire
    assert tools["forecast"]["inputSchema"]["required"] == ["city"]
    assert [(r["uri"], r["mimeType"]) for r in report["resources"]] == [
        ("test://doc", "text/plain"),
        ("test://logo", "image/png"),
    ]
    assert [(p["name"], p["arguments"][0]["name"]) for p in report["prompts"]] == [("greet", "who")]


def test_every_content_type_in_wire_form(server: RunningServer) -> None:
    run = run_ts_client(server, "--call", "media")
    assert run.returncode == 0, run
    assert run.result["content"] == [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "test://doc", "mimeType": "text/plain", "text": "embedded"}},
        {"type": "resource_link", "uri": "test://doc", "name": "doc", "mimeType": "text/plain"},
    ]
    assert run.result["_meta"]["trace_id"] == "abc"


def call_forecast(server: RunningServer, case: str | None = None) -> object:
    meta = ["--meta", json.dumps({TEST_CASE_META: case})] if case else []
    return run_ts_client(server, "--call", "forecast", "--args", '{"city": "Lima"}', *meta)


def test_turns_play_in_order_per_test_case(server: RunningServer) -> None:
    first = run_ts_client(server, "--call", "forecast", "--args", '{"city": "Lima"}')
    storm = run_ts_client(
        server, "--call", "forecast", "--args", '{"city": "Lima"}', "--meta", json.dumps({TEST_CASE_META: "storm"})
    )
    assert (first.returncode, first.texts, first.result["structuredContent"]) == (
        0,
        ["sunny"],
        {"sky": "sunny", "temp_c": 21},
    )
    assert (storm.returncode, storm.texts, storm.result["isError"]) == (EXIT_TOOL_ERROR, ["storm warning"], True)
    if server.transport == "stdio":
        return  # every stdio run is a new server process with fresh queues
    second = run_ts_client(server, "--call", "forecast", "--args", '{"city": "[test_case_id=storm] Lima"}')
    third = run_ts_client(server, "--call", "forecast", "--args", '{"city": "Lima"}')
    assert second.returncode == 1, second
    assert second.report["error"]["code"] == -32603
    assert "backend down" in second.report["error"]["message"]
    assert second.report["error"]["data"] == {"retry_after_s": 5}
    assert third.texts == ["rainy"]
    calls = server.requests("tools/call")
    assert [c["test_case"] for c in calls] == ["default", "storm", "storm", "default"]
    initialize = server.requests("initialize")
    assert {entry["params"]["clientInfo"]["name"] for entry in initialize} == {"apcore-mcp-ts-client"}


def test_in_band_directives(server: RunningServer) -> None:
    turns: list[dict[str, Any]] = [
        {"content": [{"type": "text", "text": "from the directive"}], "structured_content": {"rows": 2}},
        {"is_error": True, "content": [{"type": "text", "text": "second turn"}]},
    ]
    text = f"[test_case_id=ts-{server.transport}] [mcp_responses_json={encode_responses(turns)}] fetch it"
    first = run_ts_client(server, "--call", "get_data", "--args", json.dumps({"task_description": text}))
    assert first.returncode == 0, first
    assert (first.texts, first.result["structuredContent"]) == (["from the directive"], {"rows": 2})
    if server.transport != "stdio":
        second = run_ts_client(server, "--call", "get_data", "--args", json.dumps({"task_description": text}))
        assert (second.returncode, second.texts) == (EXIT_TOOL_ERROR, ["second turn"])


def test_progress_notifications_before_the_result(server: RunningServer) -> None:
    run = run_ts_client(server, "--call", "slow", "--progress")
    assert run.returncode == 0, run
    assert [(p["progress"], p.get("total"), p.get("message")) for p in run.report["progress"]] == [
        (1, 3, "one"),
        (2, 3, None),
        (3, 3, None),
    ]
    assert run.texts == ["done"]


def test_elicitation_answers_reach_the_result(server: RunningServer) -> None:
    accepted = run_ts_client(server, "--call", "ask_name", "--elicit", 'accept:{"name": "Grace"}')
    assert accepted.returncode == 0, accepted
    assert accepted.report["elicitations"][0]["message"] == "Who are you?"
    assert accepted.report["elicitations"][0]["requestedSchema"]["required"] == ["name"]
    assert accepted.result["structuredContent"] == {
        "answers": {"user": {"action": "accept", "content": {"name": "Grace"}}}
    }


def test_a_declined_elicitation_and_a_sampling_round(server: RunningServer, mcp_server: McpServerFactory) -> None:
    declined = run_ts_client(server, "--call", "ask_name", "--elicit", "decline")
    assert (declined.returncode, declined.texts) == (EXIT_TOOL_ERROR, ["no name given"]), declined
    both = run_ts_client(server, "--call", "two_rounds", "--elicit", 'accept:{"a": "x"}', "--sample", "a summary")
    assert both.returncode == 0, both
    assert both.report["samplings"][0]["maxTokens"] == 20
    answers = both.result["structuredContent"]["answers"]
    assert answers["second"]["content"] == {"type": "text", "text": "a summary"}
    assert answers["first"] == {"action": "accept", "content": {"a": "x"}}


def test_list_changed_announcement(server: RunningServer) -> None:
    run = run_ts_client(server, "--call", "announce")
    assert run.returncode == 0, run
    if (
        server.transport != "streamable-http"
    ):  # over HTTP it travels on a GET stream the TS client may not have opened yet
        assert "notifications/tools/list_changed" in run.report["notifications"], run
