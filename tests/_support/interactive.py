"""Test modules that use the MCP request: progress, streaming, elicitation, approval, rich content, logs.

Registered into the shared test registry by ``support.make_registry`` (so the stdio server has
them too). Modules that must prove they did (or did not) finish write a marker file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations
from mcp.types import LoggingLevel
from pydantic import BaseModel, Field

from apcore_mcp import Audio, EmbeddedResource, Image, ResourceLink, elicit, log_message, report_progress, sample

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


class ProgressIn(BaseModel):
    values: list[float] = Field(description="progress values to report, in order")
    total: float | None = None
    pause: float = 0.0


class ProgressOut(BaseModel):
    reported: int


class Progress:
    description = "Reports the given progress values, in order"
    input_schema = ProgressIn
    output_schema = ProgressOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        for value in inputs["values"]:
            await report_progress(context, value, inputs.get("total"), f"at {value}")
            if inputs.get("pause"):
                await asyncio.sleep(inputs["pause"])
        return {"reported": len(inputs["values"])}


class StreamIn(BaseModel):
    parts: int = 3
    fail_at: int | None = None


class StreamOut(BaseModel):
    parts: dict[str, int] = {}


class Streamer:
    description = "Streams one chunk per part; fails at part fail_at when given"
    input_schema = StreamIn
    output_schema = StreamOut
    annotations = ModuleAnnotations(streaming=True, readonly=True)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"parts": {f"p{i}": i for i in range(1, inputs.get("parts", 3) + 1)}}

    async def stream(self, inputs: dict[str, Any], context: Any) -> AsyncIterator[dict[str, Any]]:
        for i in range(1, inputs.get("parts", 3) + 1):
            if inputs.get("fail_at") == i:
                raise RuntimeError("stream broke: secret detail")
            yield {"parts": {f"p{i}": i}}


class AskIn(BaseModel):
    question: str = "What is your name?"


class AskOut(BaseModel):
    answer: str | None


class Ask:
    description = "Asks the user for a name"
    input_schema = AskIn
    output_schema = AskOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = await elicit(context, inputs.get("question", "What is your name?"), schema)
        return {"answer": answer.get("name") if answer else None}


class MarkerIn(BaseModel):
    marker: str = Field(description="a file written when the module runs to its end")
    seconds: float = 0.0


class MarkerOut(BaseModel):
    done: bool


class Purge:
    description = "Deletes everything (writes the marker): needs approval"
    input_schema = MarkerIn
    output_schema = MarkerOut
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        Path(inputs["marker"]).write_text("ran")
        return {"done": True}


class Sleeper:
    """Reports progress 1 once it runs, sleeps, then writes the marker.

    A cancelled call never writes the marker; it writes ``<marker>.cancelled`` as it unwinds.
    """

    description = "Sleeps, then writes the marker; a cancelled call never writes it"
    input_schema = MarkerIn
    output_schema = MarkerOut
    resources = {"timeout": 60_000}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        marker = Path(inputs["marker"])
        await report_progress(context, 1, None, "started")
        try:
            await asyncio.sleep(inputs.get("seconds", 0.0))
        except asyncio.CancelledError:
            token = getattr(context, "cancel_token", None)
            marker.with_name(marker.name + ".cancelled").write_text(str(bool(token and token.is_cancelled)))
            raise
        marker.write_text("finished")
        return {"done": True}


class Empty(BaseModel):
    pass


class MediaOut(BaseModel):
    chart: Image
    sound: Audio
    source: EmbeddedResource
    related: list[ResourceLink]
    generated_at: datetime
    title: str


class Media:
    description = "Returns an image, audio, an embedded resource, links and a timestamp"
    input_schema = Empty
    output_schema = MediaOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {
            "chart": Image(data=PNG, mimeType="image/png"),
            "sound": Audio(data=WAV, mimeType="audio/wav"),
            "source": EmbeddedResource.text_resource("data://source.csv", "a,b\n1,2\n", "text/csv"),
            "related": [ResourceLink(uri="docs://demo.echo", name="echo docs")],
            "generated_at": datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
            "title": "a chart",
        }


class LogOut(BaseModel):
    sent: int


class Logger:
    description = "Logs one message at each level"
    input_schema = Empty
    output_schema = LogOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        levels: tuple[LoggingLevel, ...] = ("debug", "info", "warning", "error")
        for level in levels:
            await log_message(context, level, f"{level} message", "demo.log")
        return {"sent": len(levels)}


class SampleOut(BaseModel):
    text: str | None


class Sampler:
    description = "Asks the client's model a question"
    input_schema = Empty
    output_schema = SampleOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        messages = [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]
        answer = await sample(context, messages, max_tokens=20)
        content = (answer or {}).get("content") or {}
        return {"text": content.get("text") if isinstance(content, dict) else None}


INTERACTIVE_MODULES: dict[str, Any] = {
    "demo.progress": Progress,
    "demo.stream": Streamer,
    "demo.ask": Ask,
    "demo.purge": Purge,
    "demo.sleep": Sleeper,
    "demo.media": Media,
    "demo.log": Logger,
    "demo.sample": Sampler,
}
