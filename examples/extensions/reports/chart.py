"""reports.chart: an interactive module — it reports progress, asks the user, and returns an image.

What it shows (see docs/interactive.md):
- ``report_progress`` once per bar drawn (a no-op when the client asked for no progress);
- ``elicit`` for a missing title, *before* any side effect: in the 2026-07-28 protocol the
  module runs again from the start once the client has answered;
- ``context.cancel_token`` checked between steps, so a cancelled call stops early;
- an ``Image`` field in the output: it reaches the client as an image content block, next to
  the structured summary.
"""

import struct
import zlib
from typing import Any, ClassVar

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field

from apcore_mcp import Image, elicit, report_progress

HEIGHT = 40
BAR = 6


class ChartInput(BaseModel):
    values: list[float] = Field(min_length=1, max_length=60, description="The values to plot, each >= 0")
    title: str | None = Field(default=None, description="Chart title; asked for when missing")


class ChartOutput(BaseModel):
    chart: Image
    title: str
    maximum: float
    mean: float


def png(width: int, height: int, rows: list[bytes]) -> bytes:
    """A grayscale PNG from raw rows (each ``width`` bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


class Chart:
    description = "Draw a bar chart of some values and summarize them"
    input_schema = ChartInput
    output_schema = ChartOutput
    tags: ClassVar[list[str]] = ["reports"]
    annotations = ModuleAnnotations(readonly=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        title = inputs.get("title")
        if not title:
            schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
            answer = await elicit(context, "What title should the chart have?", schema)
            title = (answer or {}).get("title") or "Untitled"
        values = inputs["values"]
        top = max(values) or 1.0
        columns: list[int] = []
        for index, value in enumerate(values, start=1):
            if context.cancel_token is not None and context.cancel_token.is_cancelled:
                break
            columns.append(round(value / top * (HEIGHT - 1)))
            await report_progress(context, index, len(values), f"bar {index} of {len(values)}")
        width = BAR * len(columns)
        rows = [
            bytes(0 if height >= HEIGHT - y else 255 for height in columns for _ in range(BAR)) for y in range(HEIGHT)
        ]
        return {
            "chart": Image.from_bytes(png(width, HEIGHT, rows), "image/png"),
            "title": title,
            "maximum": max(values),
            "mean": sum(values) / len(values),
        }
