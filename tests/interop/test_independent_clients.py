"""The CLI serving the example registry, checked by a client we did not write: the TypeScript SDK.

``tests/_support/ts-client.mjs`` drives the official ``@modelcontextprotocol/sdk`` over
Streamable HTTP, legacy SSE and stdio: listing, a structured call, a tool error, progress,
and approval by elicitation (accepted, declined). The conformance suites are in
``test_conformance.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.node import EXIT_TOOL_ERROR, run_ts_client

pytestmark = pytest.mark.interop

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
EXPECTED_TOOLS = ["files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"]
TRANSPORTS = ["streamable-http", "sse", "stdio"]


@pytest.fixture(scope="module", params=TRANSPORTS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(apcore_server(EXTENSIONS), request.param, tmp_path_factory.mktemp("ts-interop"))
    try:
        yield running
    finally:
        running.stop()


def test_lists_tools_and_calls_one(server: RunningServer) -> None:
    run = run_ts_client(server, "--list", "--call", "text.stats", "--args", json.dumps({"text": "a b a"}))
    assert run.returncode == 0, run
    assert sorted(tool["name"] for tool in run.report["tools"]) == EXPECTED_TOOLS, run
    structured = run.result["structuredContent"]
    assert (structured["words"], structured["characters"]) == (3, 5), run


def test_invalid_arguments_give_a_tool_error(server: RunningServer) -> None:
    run = run_ts_client(server, "--call", "text.stats", "--args", "{}")
    assert run.returncode == EXIT_TOOL_ERROR, run  # a tool result with isError, not a protocol error
    assert run.texts == ["Input validation failed:\n- text: Field required (required)"], run


def test_approval_accepted_runs_the_module(server: RunningServer) -> None:
    arguments = json.dumps({"directory": "/tmp/reports", "older_than_days": 30})
    run = run_ts_client(server, "--call", "files.purge", "--args", arguments, "--elicit", 'accept:{"approve":true}')
    assert run.returncode == 0, run
    assert run.result["structuredContent"]["dry_run"] is True, run
    [asked] = run.report["elicitations"]
    assert "files.purge" in asked["message"] and '"older_than_days": 30' in asked["message"], run


def test_approval_declined_does_not_run(server: RunningServer) -> None:
    arguments = json.dumps({"directory": "/tmp/reports", "older_than_days": 30})
    run = run_ts_client(server, "--call", "files.purge", "--args", arguments, "--elicit", "decline")
    assert run.returncode == EXIT_TOOL_ERROR, run
    assert run.texts == ["Not run: files.purge requires approval: the user declined."], run


def test_progress_and_a_question_reach_the_typescript_client(server: RunningServer) -> None:
    """reports.chart asks for a missing title, then reports one progress step per bar."""
    arguments = json.dumps({"values": [1, 2, 3]})
    run = run_ts_client(
        server, "--call", "reports.chart", "--args", arguments, "--progress", "--elicit", 'accept:{"title":"Q3"}'
    )
    assert run.returncode == 0, run
    assert run.result["structuredContent"]["title"] == "Q3", run
    assert [block["type"] for block in run.result["content"]] == ["image", "text"], run
    assert [(p["progress"], p["total"]) for p in run.report["progress"]] == [(1, 3), (2, 3), (3, 3)], run
