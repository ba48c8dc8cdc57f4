"""greet: a plain (not task) tool, `Hello, {name}!`."""

from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text


class GreetIn(BaseModel):
    name: str = "world"


class GreetOut(BaseModel):
    message: Text


class Greet:
    description = "Greets by name (runs as an ordinary call)"
    input_schema = GreetIn
    output_schema = GreetOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"message": Text(text=f"Hello, {inputs.get('name', 'world')}!")}
