"""Modules with large results for the result budget tests (``calls/budget.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from apcore import ModuleAnnotations, Registry
from mcp import types
from pydantic import BaseModel, Field

from apcore_mcp.calls.budget import TRUNCATED_META_KEY
from apcore_mcp.tools.content import Text

PROSE = "é€😀a"
"""Characters of 2, 3, 4 and 1 bytes in UTF-8: a cut at any byte offset may land inside one."""


class CountIn(BaseModel):
    count: int = Field(default=10, ge=0, le=100_000)


class ListOut(BaseModel):
    items: list[str]
    total: int


class Listing:
    description = "count numbered items, with their total"
    input_schema = CountIn
    output_schema = ListOut

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"items": [f"item-{i:05d}" for i in range(inputs["count"])], "total": inputs["count"]}


class TightListing(Listing):
    description = "the same items, with a result budget of its own"
    annotations = ModuleAnnotations(readonly=True, extra={"mcp.max_result_bytes": 600})


class LooseListing(Listing):
    description = "the same items, asking for more than the server allows"
    annotations = ModuleAnnotations(readonly=True, extra={"mcp.max_result_bytes": 1_000_000})


class ProseOut(BaseModel):
    text: str


class TextOut(BaseModel):
    body: Text


class Prose:
    description = "count times the multi-byte PROSE, as one text block (no structured content)"
    input_schema = CountIn
    output_schema = TextOut

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"body": Text(text=PROSE * inputs["count"])}


class Streamed:
    description = "streams count parts of multi-byte text"
    input_schema = CountIn
    output_schema = ProseOut
    annotations = ModuleAnnotations(streaming=True, readonly=True)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": PROSE * inputs["count"]}

    async def stream(self, inputs: dict[str, Any], context: Any) -> AsyncIterator[dict[str, Any]]:
        for part in range(1, 4):
            yield {"text": PROSE * (inputs["count"] * part // 3)}


class TaskListing(Listing):
    description = "the numbered items, run as a task"
    annotations = ModuleAnnotations(extra={"mcp.task_support": "optional"})


def budget_registry() -> Registry:
    registry = Registry()
    registry.register("data.list", Listing())
    registry.register("data.tight", TightListing())
    registry.register("data.loose", LooseListing())
    registry.register("data.prose", Prose())
    registry.register("data.stream", Streamed())
    registry.register("data.task", TaskListing())
    return registry


def announcement(result: types.CallToolResult) -> types.TextContent:
    """The text block announcing the cut (checked to carry its figures)."""
    found = [block for block in result.content if isinstance(block, types.TextContent) and block.meta]
    assert len(found) == 1, result.content
    assert TRUNCATED_META_KEY in (found[0].meta or {}), found[0]
    return found[0]


def sent_bytes(result: types.CallToolResult) -> int:
    """What the budget counts of ``result``: its content blocks and structuredContent as compact JSON,
    without the announcement and its link."""
    blocks = [
        block.model_dump(mode="json", by_alias=True, exclude_none=True)
        for block in result.content
        if not (isinstance(block, types.TextContent) and block.meta) and block.type != "resource_link"
    ]
    size = len(json.dumps(blocks, ensure_ascii=False, separators=(",", ":")).encode())
    if result.structured_content is not None:
        size += len(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":")).encode())
    return size
