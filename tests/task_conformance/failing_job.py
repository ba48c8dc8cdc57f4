"""failing_job: a task-only tool whose work ends in a tool error after a moment."""

import asyncio
from typing import Any

from apcore import ModuleAnnotations
from apcore.errors import ModuleError
from pydantic import BaseModel


class Empty(BaseModel):
    pass


class FailingJob:
    description = "Fails after a moment (a tool error, reported in the task's result)"
    input_schema = Empty
    output_schema = Empty
    annotations = ModuleAnnotations(extra={"mcp.task_support": "required"})

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await asyncio.sleep(1)
        raise ModuleError("JOB_FAILED", "The job failed")
