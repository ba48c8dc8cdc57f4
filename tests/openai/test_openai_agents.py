"""The OpenAI Agents SDK (``openai-agents``) lists our server's tools over Streamable HTTP, converts
every one to strict mode, and calls one: a real MCP round trip, only the model is a stub."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, ModelSettings, RunConfig, Runner, Usage
from agents.mcp import MCPServerStreamableHttp, MCPUtil
from mcp.types import Tool
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from apcore_mcp.testing import command_server, start_server

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TOOLS = {"files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"}


class OneToolCall(Model):
    """A model that calls ``text.stats`` once, then answers with what the tool returned."""

    def __init__(self) -> None:
        self.tools: list[Any] = []
        self.inputs: list[Any] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.tools = list(tools)
        self.inputs.append(input)
        if len(self.inputs) == 1:
            call = ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id="call_1",
                name="text.stats",
                arguments=json.dumps({"text": "the cat and the hat"}),
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(type="message", id="m_1", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the stub does not stream")


async def test_openai_agents_lists_converts_strictly_and_calls_our_tools(tmp_path: Path) -> None:
    argv = [str(Path(sys.executable).parent / "apcore-mcp"), "--extensions-dir", "examples/extensions"]
    argv += ["--transport", "streamable-http", "--port", "{port}"]
    server = start_server(command_server(argv, cwd=REPO, health_path="/health"), "streamable-http", tmp_path)
    try:
        assert server.url is not None
        model = OneToolCall()
        async with MCPServerStreamableHttp(params={"url": server.url, "timeout": 10}, name="apcore") as mcp:
            agent = Agent(name="stats", model=model, mcp_servers=[mcp], mcp_config={"convert_schemas_to_strict": True})
            result = await Runner.run(agent, "Count the words", run_config=RunConfig(tracing_disabled=True))
    finally:
        server.stop()
    tools = {tool.name: tool for tool in model.tools if isinstance(tool, FunctionTool)}
    assert set(tools) == EXAMPLE_TOOLS
    assert {name: tool.strict_json_schema for name, tool in tools.items()} == dict.fromkeys(EXAMPLE_TOOLS, True)
    assert result.final_output == "done"
    outputs = [
        item for item in model.inputs[1] if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 1
    (content,) = outputs[0]["output"]  # the MCP result's one text block
    assert content["type"] == "input_text"
    assert json.loads(content["text"])["words"] == 5  # text.stats ran on our server


def test_the_agents_sdk_refuses_a_schema_strict_mode_cannot_take() -> None:
    """The judge above can fail: an open object is no strict schema to it."""
    server = MCPServerStreamableHttp(params={"url": "http://127.0.0.1:9/mcp"}, name="unused")
    closed = Tool(name="closed", input_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    open_object = Tool(
        name="open",
        input_schema={"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
    )
    assert MCPUtil.to_function_tool(closed, server, convert_schemas_to_strict=True).strict_json_schema is True
    assert MCPUtil.to_function_tool(open_object, server, convert_schemas_to_strict=True).strict_json_schema is False
