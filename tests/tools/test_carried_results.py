"""A module may return an MCP tool result as is (``MCP_RESULT_KEY``, as upstream tools do).

Every edge takes it as the result: an MCP client (the explorer's page is one) gets it unchanged;
a carried text that is not JSON is the module's error, answered as one (it used to escape the
call path as an exception).
"""

from __future__ import annotations

import json
from typing import Any

from apcore import Registry
from mcp import Client
from pydantic import BaseModel, ConfigDict

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.router import SERIALIZATION_ERROR
from apcore_mcp.settings import Settings
from apcore_mcp.tools.content import MCP_RESULT_KEY

from tests._support.results import text_of

RESULTS: dict[str, Any] = {
    "ok": {"content": [{"type": "text", "text": "carried"}], "structuredContent": {"n": 1}},
    "failed": {"content": [{"type": "text", "text": "upstream said no"}], "isError": True},
}


class Mode(BaseModel):
    mode: str


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


class Carrier:
    description = "Returns a tool result as is: as JSON text, or text that is not JSON"
    input_schema = Mode
    output_schema = Anything

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        mode = inputs["mode"]
        return {MCP_RESULT_KEY: json.dumps(RESULTS[mode]) if mode in RESULTS else "{not json"}


def bridge() -> Bridge:
    registry = Registry()
    registry.register("demo.carrier", Carrier())
    return Bridge.build(registry, Settings(explorer=True, allow_execute=True))


async def test_an_mcp_client_gets_the_carried_result_and_a_broken_one_is_an_error_result() -> None:
    served = bridge()
    async with Client(served.server, mode="legacy", cache=None) as client:
        ok = await client.call_tool("demo.carrier", {"mode": "ok"})
        failed = await client.call_tool("demo.carrier", {"mode": "failed"})
        broken = await client.call_tool("demo.carrier", {"mode": "broken"})
    assert (ok.is_error, ok.structured_content, text_of(ok)) == (False, {"n": 1}, "carried")
    assert (failed.is_error, text_of(failed)) == (True, "upstream said no")
    assert broken.is_error and text_of(broken) == SERIALIZATION_ERROR
