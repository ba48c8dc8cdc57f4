import asyncio
from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, log_message


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class ToolWithLogging:
    description = "Sends three log messages while it runs"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await log_message(context, "info", "Tool execution started")
        await asyncio.sleep(0.05)
        await log_message(context, "info", "Tool processing data")
        await asyncio.sleep(0.05)
        await log_message(context, "info", "Tool execution completed")
        return {"message": Text(text="Tool with logging executed successfully")}
