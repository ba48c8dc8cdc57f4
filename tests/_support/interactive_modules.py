"""Small interactive modules the explorer's MCP tests drive from the page (tests/http/explorer/test_explorer_mcp_browser.py).

Each proves what happened through its result or a marker file: ``ui.ask`` asks the user before it
does anything (in the 2026-07-28 era it runs again from the start with the answer), ``ui.approve``
needs the user's approval, ``ui.wipe`` is destructive (the page confirms), ``ui.steps`` reports
progress step by step and writes ``<marker>.cancelled`` when it is cancelled, ``finished`` only
when it runs to its end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations, Registry
from pydantic import BaseModel, Field

from apcore_mcp import elicit, log_message, release_stream, report_progress


class AskIn(BaseModel):
    greeting: str = Field(default="Hello", description="How to greet the person")


class AskOut(BaseModel):
    message: str
    answered: bool


class Ask:
    description = "Asks for a name and a number of stars, then greets"
    input_schema = AskIn
    output_schema = AskOut
    annotations = ModuleAnnotations(readonly=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "stars": {"type": "integer", "minimum": 0, "maximum": 5},
            },
            "required": ["name"],
        }
        answer = await elicit(context, "Who is asking?", schema)
        if answer is None:
            return {"message": "nobody answered", "answered": False}
        stars = "*" * int(answer.get("stars") or 0)
        return {"message": f"{inputs.get('greeting', 'Hello')}, {answer['name']}{stars}", "answered": True}


class MarkerIn(BaseModel):
    marker: str = Field(description="A file the module writes when it runs")


class Done(BaseModel):
    done: bool


class Approve:
    description = "Publishes the report (writes the marker): needs the user's approval"
    input_schema = MarkerIn
    output_schema = Done
    annotations = ModuleAnnotations(requires_approval=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        Path(inputs["marker"]).write_text("ran")
        return {"done": True}


class Wipe:
    description = "Wipes the cache (writes the marker): destructive"
    input_schema = MarkerIn
    output_schema = Done
    annotations = ModuleAnnotations(destructive=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        Path(inputs["marker"]).write_text("ran")
        return {"done": True}


class StepsIn(BaseModel):
    marker: str = Field(description="Written with 'finished' once every step ran")
    steps: int = Field(default=3, ge=1, le=200)
    pause: float = Field(default=0.0, ge=0, le=2)


class StepsOut(BaseModel):
    steps: int


class Steps:
    description = "Reports progress once per step; a cancelled call never writes 'finished'"
    input_schema = StepsIn
    output_schema = StepsOut
    resources = {"timeout": 120_000}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        marker = Path(inputs["marker"])
        steps = inputs.get("steps", 3)
        try:
            for step in range(1, steps + 1):
                await report_progress(context, step, steps, f"step {step} of {steps}")
                await asyncio.sleep(inputs.get("pause", 0.0))
        except asyncio.CancelledError:
            marker.with_name(marker.name + ".cancelled").write_text("cancelled")
            raise
        marker.write_text("finished")
        await log_message(context, "debug", "not sent: below the page's level")
        await log_message(context, "info", f"finished {steps} steps", "ui.steps")
        return {"steps": steps}


class LongIn(BaseModel):
    size: int = Field(default=1000, ge=1, le=100_000)


class LongOut(BaseModel):
    text: str
    released: bool


class Long:
    description = "Closes its response stream (a long call), then answers: the client resumes to get the answer"
    input_schema = LongIn
    output_schema = LongOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await report_progress(context, 1, 2, "releasing the stream")
        released = await release_stream(context)
        await asyncio.sleep(0.3)
        await report_progress(context, 2, 2, "done")
        return {"text": "x" * inputs.get("size", 1000), "released": released}


INTERACTIVE_UI_MODULES: dict[str, Any] = {
    "ui.ask": Ask,
    "ui.approve": Approve,
    "ui.wipe": Wipe,
    "ui.steps": Steps,
    "ui.long": Long,
}


def interactive_registry() -> Registry:
    registry = Registry()
    for module_id, module_class in INTERACTIVE_UI_MODULES.items():
        registry.register(module_id, module_class())
    return registry
