"""jobs.long: `steps` steps of `delay` seconds, progress after each; names its replica; writes
`<marker>.cancelled` when its work is cancelled (a test on another process sees it)."""

import asyncio
import os
from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field

from apcore_mcp import report_progress


class LongIn(BaseModel):
    steps: int = Field(ge=0, le=10_000)
    delay: float = Field(ge=0, le=10)
    marker: str = ""


class LongOut(BaseModel):
    done: int
    replica: str


class Long:
    description = "A long job: steps of a delay each, with progress"
    input_schema = LongIn
    output_schema = LongOut
    annotations = ModuleAnnotations(open_world=False, extra={"mcp.task_support": "optional"})

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        steps = inputs["steps"]
        try:
            for step in range(1, steps + 1):
                await asyncio.sleep(inputs["delay"])
                await report_progress(context, step, steps)
        except asyncio.CancelledError:
            if inputs.get("marker"):
                Path(inputs["marker"] + ".cancelled").write_text(str(context.cancel_token.is_cancelled))
            raise
        return {"done": steps, "replica": os.environ.get("REPLICA_NAME", str(os.getpid()))}
