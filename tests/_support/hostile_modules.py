"""Modules a hostile client would love: odd outputs, huge outputs, slow calls that count their ends."""

from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apcore import Registry
from pydantic import BaseModel

LONG_ID = "hostile." + "deeply_nested_component_name." * 2 + "run_the_operation_fully"
"""An 89-character module id: fine for MCP (128), too long for an OpenAI name (64)."""
TOO_LONG_ID = "hostile." + "x" * 130
"""Longer than the 128 characters an MCP tool name may have: not served."""


class Empty(BaseModel):
    pass


class Surrogate:
    """A file name decoded with surrogateescape, as os.listdir gives for non-UTF-8 bytes."""

    description = "Returns a string holding a lone surrogate, and NaN"
    input_schema = Empty

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"name": b"caf\xe9.txt".decode("utf-8", "surrogateescape"), "ratio": math.nan}


class Huge:
    description = "Returns 100 MB of text"
    input_schema = Empty

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"blob": "x" * (100 * 1024 * 1024)}


class BlobIn(BaseModel):
    size: int = 1024
    fill: str = "x"


class Blob:
    description = "Returns `fill` repeated up to `size` characters"
    input_schema = BlobIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        fill = inputs.get("fill") or "x"
        size = inputs.get("size", 1024)
        return {"blob": (fill * (size // len(fill) + 1))[:size]}


class SleepIn(BaseModel):
    seconds: float = 30.0


@dataclass
class Counts:
    started: int = 0
    finished: int = 0
    cancelled: int = 0


class Sleeper:
    """Sleeps, counting how its calls end; with ``marker_dir`` (stdio runs) it also leaves files."""

    description = "Sleeps for a while and counts how its calls end"
    input_schema = SleepIn

    def __init__(self, marker_dir: str | None = None) -> None:
        self.counts = Counts()
        self.marker_dir = marker_dir

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self._mark("started")
        try:
            await asyncio.sleep(inputs.get("seconds", 30.0))
        except asyncio.CancelledError:
            self._mark("cancelled")
            raise
        self._mark("finished")
        return {"slept": inputs.get("seconds", 30.0)}

    def _mark(self, what: str) -> None:
        setattr(self.counts, what, getattr(self.counts, what) + 1)
        if self.marker_dir:
            Path(self.marker_dir, f"{what}-{os.getpid()}-{getattr(self.counts, what)}").touch()


class Echo:
    description = "Echoes its arguments"
    input_schema = Empty

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"ok": True}


def hostile_registry(marker_dir: str | None = None) -> Registry:
    registry = Registry()
    registry.register("hostile.surrogate", Surrogate())
    registry.register("hostile.huge", Huge())
    registry.register("hostile.blob", Blob())
    registry.register("hostile.sleep", Sleeper(marker_dir))
    registry.register("hostile.echo", Echo())
    registry.register(LONG_ID, Echo())
    registry.register(TOO_LONG_ID, Echo())
    return registry


def sleeper(registry: Registry) -> Sleeper:
    module = registry.get("hostile.sleep")
    assert isinstance(module, Sleeper)
    return module
