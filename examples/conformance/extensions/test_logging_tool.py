from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, log_message


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class LoggingTool:
    description = "Logs at every level; only what the request opted into is sent"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        for level in ("debug", "info", "warning", "error"):
            await log_message(context, level, f"a {level} message", "test_logging_tool")
        return {"message": Text(text="logged")}
