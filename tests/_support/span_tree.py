"""Traced calls through real servers, recorded by the SDK's in-memory exporter: ``python -m tests._support.span_tree``.

A tracer provider is process-global and set once, so tests/calls/test_traces.py runs this in a
subprocess and reads the spans it prints (one JSON object per line, after ``SPANS``).

Two of our servers run under uvicorn on free 127.0.0.1 ports in this process: ``upstream``
serves ``demo.echo``; ``main`` serves ``trace.relay`` (it needs the user's approval, reports
progress, opens a span of its own and calls ``up.demo_echo`` on the upstream through the
Executor) and mounts ``upstream`` over Streamable HTTP from an ``mcp.json``. Scenarios:

- ``client <era>``: the SDK's client (``2025-11-25`` or ``2026-07-28``) calls ``trace.relay``,
  approving when asked; its own span's context reaches the server in ``_meta``;
- ``header``: one 2026-07-28 ``tools/call`` POST of ``demo.echo`` carrying only a ``traceparent`` header;
- ``explorer``: the same POST to the explorer's door (``/explorer/mcp``), from the page's origin;
- ``arguments``: ``client 2026-07-28`` with ``trace_arguments`` on;
- ``search``: the same, in search mode, through ``invoke_tool``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
from apcore import Executor, ModuleAnnotations, Registry
from mcp import Client
from mcp.client.context import ClientRequestContext
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel, Field

from apcore_mcp import MCPApprovalHandler, report_progress
from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import serving_http
from apcore_mcp.settings import Settings

from tests._support.hostile import MODERN_META, modern_headers, tool_call
from tests._support.modules import make_executor

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
MODULE_SPAN = "relay.work"


class RelayIn(BaseModel):
    text: str = Field(description="What the upstream echoes")
    password: str = Field(default="", description="Never recorded", json_schema_extra={"x-sensitive": True})


class RelayOut(BaseModel):
    echoed: str
    trace_id: str


class Relay:
    description = "Needs approval, reports progress, asks the upstream to echo"
    input_schema = RelayIn
    output_schema = RelayOut
    annotations = ModuleAnnotations(requires_approval=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await report_progress(context, 1, 2, "asking the upstream")
        with trace.get_tracer("relay").start_as_current_span(MODULE_SPAN):
            output = await context.executor.call_async("up.demo_echo", {"text": inputs["text"]}, context)
        await report_progress(context, 2, 2)
        return {"echoed": json.dumps(output)[:200], "trace_id": context.trace_id}


async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


def span_record(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace": format(context.trace_id, "032x"),
        "id": format(context.span_id, "016x"),
        "parent": format(span.parent.span_id, "016x") if span.parent is not None else None,
        "attributes": dict(span.attributes or {}),
        "events": [{"name": event.name, **dict(event.attributes or {})} for event in span.events],
        "status": span.status.status_code.name,
    }


async def run(scenario: str, era: str, exporter: InMemorySpanExporter) -> None:
    async with serving_http(Bridge.build(make_executor(), Settings())) as (_up, upstream):
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"up": {"url": f"{upstream}/mcp"}}}))
            registry = Registry()
            registry.register("trace.relay", Relay())
            executor = Executor(registry, approval_handler=MCPApprovalHandler())
            settings = Settings(
                mcp_config=str(config),
                explorer=True,
                allow_execute=True,
                trace_arguments=scenario in ("arguments", "search"),
                tool_mode="search" if scenario == "search" else "list",
            )
            async with serving_http(Bridge.build(executor, settings)) as (_main, main):
                exporter.clear()  # the start-up's own requests (listing the upstream's tools)
                await scenario_call(scenario, era, main)
    await asyncio.sleep(0)


async def scenario_call(scenario: str, era: str, main: str) -> None:
    if scenario in ("client", "arguments", "search"):
        mode = "legacy" if era == "2025-11-25" else "auto"
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        async with Client(f"{main}/mcp", mode=mode, elicitation_callback=approve) as client:
            arguments: dict[str, Any] = {"text": "Ada", "password": "hunter2"}
            if scenario == "search":
                name, arguments = "invoke_tool", {"name": "trace.relay", "arguments": arguments}
            else:
                name = "trace.relay"
            result = await client.call_tool(name, arguments, progress_callback=on_progress)
        assert not result.is_error, result
        print("RESULT", json.dumps(result.structured_content))
        print("PROGRESS", json.dumps(seen))
        return
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    path = "/mcp" if scenario == "header" else "/explorer/mcp"
    if scenario == "explorer":
        headers["origin"] = main  # the page's own origin
    async with httpx.AsyncClient(timeout=30) as http:
        body = tool_call(1, "up.demo_echo", {"text": "Ada"}, modern=True)
        assert "traceparent" not in MODERN_META
        response = await http.post(
            f"{main}{path}", json=body, headers={**modern_headers("tools/call", "up.demo_echo"), **headers}
        )
        assert response.status_code == 200, response.text
        print("RESULT", json.dumps(response.json()))


def recorded(*args: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a scenario in a subprocess: what it printed before the spans (by tag), and the spans."""
    done = subprocess.run(
        [sys.executable, "-m", "tests._support.span_tree", *args],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout.splitlines()
    at = out.index("SPANS")
    lines = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in out[:at] if " " in line}
    return lines, [json.loads(line) for line in out[at + 1 :]]


def main() -> None:
    scenario, era = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "2026-07-28")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    asyncio.run(run(scenario, era, exporter))
    print("SPANS")
    for span in exporter.get_finished_spans():
        print(json.dumps(span_record(span), default=str))


if __name__ == "__main__":
    main()
