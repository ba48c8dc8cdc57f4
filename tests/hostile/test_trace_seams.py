"""Traces where they meet the other features: search mode's dispatcher, the stdio transport, hostile trace context.

- Search mode and ``trace_arguments``: ``invoke_tool``'s arguments hold its target's, which only
  the target's schema marks ``x-sensitive``; recorded on ``invoke_tool``'s span they would carry a
  password in clear. They are recorded (redacted) on the target's span only.
- stdio and the ``console`` exporter: the SDK's console exporter writes to stdout, which is the
  stdio transport's protocol stream; ours writes to stderr, and the client still works.
- A caller's trace context is input: a ``traceparent`` that is not a string, or is garbage, in
  ``_meta`` or in the header, starts no trace of its own and fails no call (with or without a
  tracer provider: without one, a valid context still becomes apcore's ``trace_id``).
- Recorded arguments are bounded, however large the call.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from apcore import Executor, ModuleAnnotations, Registry
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.spans import MAX_ARGUMENTS_CHARS, recorded_arguments
from apcore_mcp.settings import Settings

from tests._support.hostile import MODERN_META, modern_headers
from tests._support.sessions import REPO, running_http
from tests._support.span_tree import CALLER_SPAN, CALLER_TRACE, TRACEPARENT, recorded

pytestmark = pytest.mark.timeout(180)


def test_search_mode_records_a_dispatchers_arguments_only_on_its_target_redacted() -> None:
    _, spans = recorded("search")
    assert "hunter2" not in json.dumps(spans)
    outer = [s for s in spans if s["name"] == "call invoke_tool" and s["attributes"]["apcore.call.outcome"] == "ok"]
    [invoke] = outer
    assert "gen_ai.tool.call.arguments" not in invoke["attributes"]
    [target] = [s for s in spans if s["parent"] == invoke["id"]]
    assert target["name"] == "call trace.relay"
    arguments = json.loads(target["attributes"]["gen_ai.tool.call.arguments"])
    assert arguments["text"] == "Ada" and arguments["password"] == "***REDACTED***"


def test_the_console_exporter_leaves_the_stdio_protocol_alone() -> None:
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "20"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "apcore_mcp", "--extensions-dir", str(REPO / "examples" / "extensions")],
        env=env,
        cwd=REPO,
    )
    errors = Path(os.environ.get("TMPDIR", "/tmp")) / f"trace-stdio-{os.getpid()}.log"

    async def talk() -> list[str]:
        with errors.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                return [tool.name for tool in listed.tools]

    import anyio

    try:
        names = anyio.run(talk)
        assert names  # the protocol survived the exporter
        written = errors.read_text()
        assert '"name": "tools/list"' in written  # the span, on stderr
    finally:
        errors.unlink(missing_ok=True)


class TraceOut(BaseModel):
    trace_id: str


class TraceIn(BaseModel):
    pass


class TraceId:
    description = "Returns the trace id apcore gave the call"
    input_schema = TraceIn
    output_schema = TraceOut
    annotations = ModuleAnnotations(readonly=True, open_world=False)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"trace_id": context.trace_id}


HOSTILE_META = [
    123,
    ["00-" + CALLER_TRACE + "-" + CALLER_SPAN + "-01"],
    {"a": 1},
    "garbage",
    "00-" + "0" * 32 + "-0-01",
]


async def test_hostile_trace_context_fails_no_call_and_a_valid_one_names_the_trace() -> None:
    registry = Registry()
    registry.register("trace.id", TraceId())
    bridge = Bridge.build(Executor(registry), Settings())
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}

    async def call(meta: dict[str, Any], headers: dict[str, str]) -> str:
        params = {"name": "trace.id", "arguments": {}, "_meta": {**MODERN_META, **meta}}
        response = await http.post(
            f"{url}/mcp",
            json={**body, "params": params},
            headers={**modern_headers("tools/call", "trace.id"), **headers},
        )
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert not result.get("isError"), result
        return str(result["structuredContent"]["trace_id"])

    async with running_http(bridge) as url, httpx.AsyncClient(timeout=30) as http:
        for value in HOSTILE_META:
            assert await call({"traceparent": value}, {}) != CALLER_TRACE
        assert await call({}, {"traceparent": "not-a-trace"}) != CALLER_TRACE
        assert await call({"traceparent": 7}, {"traceparent": TRACEPARENT}) != CALLER_TRACE  # _meta wins, and is bad
        # No tracer provider in this process, yet a valid context still reaches apcore's Context.
        assert await call({}, {"traceparent": TRACEPARENT}) == CALLER_TRACE
        assert await call({"traceparent": TRACEPARENT}, {}) == CALLER_TRACE


def test_recorded_arguments_are_cut_and_redacted() -> None:
    schema = {"type": "object", "properties": {"key": {"type": "string", "x-sensitive": True}}}
    text = recorded_arguments({"key": "s3cret", "blob": "x" * 1_000_000}, schema)
    assert len(text) <= MAX_ARGUMENTS_CHARS and "s3cret" not in text
    assert recorded_arguments({"api_token": "abc"}, None) == '{"api_token":"***REDACTED***"}'  # by its name
