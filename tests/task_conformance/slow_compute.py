"""slow_compute: sleeps `seconds`, then answers; runs as a task for clients that take one."""

import asyncio
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field

from apcore_mcp import Text


class SlowIn(BaseModel):
    seconds: float = Field(default=1, ge=0, le=60)


class SlowOut(BaseModel):
    message: Text


class SlowCompute:
    description = "Sleeps for `seconds`, then answers"
    input_schema = SlowIn
    output_schema = SlowOut
    annotations = ModuleAnnotations(extra={"mcp.task_support": "optional"})
    resources = {"timeout": 120_000}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await asyncio.sleep(inputs.get("seconds", 1))
        return {"message": Text(text=f"Computed after {inputs.get('seconds', 1)} s")}
