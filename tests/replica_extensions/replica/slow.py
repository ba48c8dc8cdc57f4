"""replica.slow: answers after `ms` milliseconds (a call still in flight when a replica stops)."""

import asyncio
import os
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field


class SlowIn(BaseModel):
    text: str
    ms: int = Field(ge=0, le=20_000)


class SlowOut(BaseModel):
    text: str
    replica: str


class Slow:
    description = "Wait, then echo the text and name the replica"
    input_schema = SlowIn
    output_schema = SlowOut
    annotations = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        await asyncio.sleep(inputs["ms"] / 1000)
        return {"text": inputs["text"], "replica": os.environ.get("REPLICA_NAME", str(os.getpid()))}
