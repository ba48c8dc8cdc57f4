from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class SimpleText:
    description = "Returns a simple text response"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"message": Text(text="This is a simple text response for testing.")}
