import asyncio
from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, report_progress


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class ToolWithProgress:
    description = "Reports progress 0, 50 and 100 of 100"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        for step, value in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(0.05)
            await report_progress(context, value, 100, f"step {step + 1} of 3")
        return {"message": Text(text="Tool with progress executed successfully")}
