"""A module whose input is a JSON Schema document (``json_schema_model``): listed as written, enforced."""

from __future__ import annotations

from pathlib import Path

from apcore import Registry
from mcp import Client

from apcore_mcp.bridge import Bridge

from tests._support.results import text_of

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "conformance" / "extensions"


async def test_a_declared_dialect_is_served_as_written_and_validated() -> None:
    registry = Registry(extensions_dir=str(EXTENSIONS))
    registry.discover()
    bridge = Bridge.build(registry)
    async with Client(bridge.server, mode="legacy") as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "json_schema_2020_12_tool")
        ok = await client.call_tool("json_schema_2020_12_tool", {"name": "Ann", "contactMethod": "phone", "phone": "1"})
        no_phone = await client.call_tool("json_schema_2020_12_tool", {"name": "Ann", "contactMethod": "phone"})
        extra = await client.call_tool("json_schema_2020_12_tool", {"email": "a@b", "nickname": "x"})
    schema = tool.input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert schema["then"] == {"required": ["phone"]} and schema["additionalProperties"] is False
    assert ok.is_error is False and text_of(ok) == "Contact Ann by phone"
    assert no_phone.is_error is True and "phone" in text_of(no_phone)
    assert extra.is_error is True and "nickname" in text_of(extra)
