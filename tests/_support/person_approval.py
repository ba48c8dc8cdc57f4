"""What the tests of approval a person decides share: the person-approved modules and an SDK caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations, Registry
from mcp import Client, types
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel

PERSON = ModuleAnnotations(requires_approval=True, extra={"mcp.approval": "person"})


class WipeIn(BaseModel):
    marker: str
    password: str = ""


class Wipe:
    description = "Wipe a target"
    input_schema = WipeIn
    annotations = PERSON

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        with open(inputs["marker"], "a") as file:
            file.write("ran\n")
        return {"wiped": True}


class Shred(Wipe):
    description = "Shred a target"


def person_registry() -> Registry:
    registry = Registry()
    registry.register("person.wipe", Wipe())
    registry.register("person.shred", Shred())
    return registry


def runs(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def link_of(params: types.ElicitRequestParams) -> str:
    assert isinstance(params, types.ElicitRequestURLParams), params
    return params.url


async def sdk_call(url: str, mode: str, answer: Any, arguments: dict[str, Any], **headers: str) -> types.CallToolResult:
    """``person.wipe`` called by an SDK client whose elicitation callback is ``answer(params)``."""

    async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        result: types.ElicitResult = await answer(params)
        return result

    async with create_mcp_http_client(headers=headers or None) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode=mode, cache=None, elicitation_callback=on_elicit) as client:
            return await client.call_tool("person.wipe", arguments)
