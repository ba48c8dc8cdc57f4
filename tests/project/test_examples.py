"""The example registry the quick start serves: every module loads, lists and answers."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import mcp.types as types
import pytest
from apcore import Registry
from mcp import Client
from mcp.client import ClientRequestContext

from apcore_mcp.bridge import Bridge

from tests._support.results import text_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"


def example_registry() -> Registry:
    registry = Registry(extensions_dir=str(EXAMPLES))
    assert registry.discover() == 5
    return registry


async def test_examples_serve_and_answer() -> None:
    bridge = Bridge.build(example_registry())
    async with Client(bridge.server, mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == ["files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"]
        purge_tool, stats_tool = tools["files.purge"], tools["text.stats"]
        assert purge_tool.annotations is not None and purge_tool.annotations.destructive_hint is True
        assert purge_tool.meta is not None and purge_tool.meta["apcore/requiresApproval"] is True
        assert stats_tool.annotations is not None and stats_tool.annotations.read_only_hint is True
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
        assert text_of(purge).startswith("Not run: files.purge requires approval: the client cannot ask")
        docs = (await client.read_resource("docs://text.stats")).contents[0]
        assert isinstance(docs, types.TextResourceContents) and "top_n" in docs.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_interactive_example_asks_reports_and_draws(mode: str) -> None:
    """reports.chart: asks for a missing title (a round trip in either era), reports progress, returns a PNG."""
    asked: list[str] = []
    reported: list[tuple[float, float | None]] = []

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"title": "Sales"})

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total))

    bridge = Bridge.build(example_registry())
    async with Client(bridge.server, mode=mode, elicitation_callback=answer) as client:
        result = await client.call_tool("reports.chart", {"values": [1, 4, 2]}, progress_callback=on_progress)
    assert asked == ["What title should the chart have?"]
    assert result.structured_content == {"title": "Sales", "maximum": 4.0, "mean": 7 / 3}
    image = result.content[0]
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"
    # In 2026-07-28 the module runs twice (asking ends the first run); it asks before any progress.
    assert reported == [(1, 3), (2, 3), (3, 3)]
