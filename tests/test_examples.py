"""The example registry the README serves: every module loads, lists and answers."""

from __future__ import annotations

import json
from pathlib import Path

from apcore import Registry
from mcp import Client

from apcore_mcp.bridge import Bridge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "extensions"


def example_registry() -> Registry:
    registry = Registry(extensions_dir=str(EXAMPLES))
    assert registry.discover() == 4
    return registry


async def test_examples_serve_and_answer() -> None:
    bridge = Bridge.build(example_registry())
    async with Client(bridge.server, mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == ["files.purge", "geo.distance", "tasks.schedule", "text.stats"]
        assert tools["files.purge"].annotations.destructive_hint is True
        assert tools["files.purge"].meta["apcore/requiresApproval"] is True
        assert tools["text.stats"].annotations.read_only_hint is True
        schedule_props = tools["tasks.schedule"].input_schema["properties"]
        assert schedule_props["reminders"]["items"]["properties"]["minutes_before"]["maximum"] == 43200
        assert "$defs" not in json.dumps(tools["tasks.schedule"].input_schema)

        stats = await client.call_tool("text.stats", {"text": "the cat and the hat", "top_n": 1})
        assert stats.structured_content == {
            "characters": 19,
            "words": 5,
            "lines": 1,
            "top_words": [{"word": "the", "count": 2}],
        }
        distance = await client.call_tool(
            "geo.distance", {"origin": {"lat": 52.52, "lon": 13.405}, "destination": {"lat": 48.8566, "lon": 2.3522}}
        )
        assert 870 < distance.structured_content["distance"] < 885
        task = await client.call_tool(
            "tasks.schedule",
            {"title": "ship", "due": "2026-12-01T10:00:00", "reminders": [{"minutes_before": 30}]},
        )
        assert task.is_error is False
        assert task.structured_content["reminder_times"] == ["2026-12-01T09:30:00"]
        # files.purge requires approval; this client cannot be asked, so it does not run (fails closed).
        purge = await client.call_tool("files.purge", {"directory": "/tmp", "older_than_days": 3})
        assert purge.is_error is True
        assert purge.content[0].text.startswith("Not run: files.purge requires approval and the client cannot ask")
        docs = await client.read_resource("docs://text.stats")
        assert "top_n" in docs.contents[0].text
    bridge.close()
