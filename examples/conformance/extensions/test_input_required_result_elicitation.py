from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, elicit

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredElicitation:
    description = "Asks for the user's name, then greets them"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        answer = await elicit(context, "What is your name?", SCHEMA, key="user_name")
        name = (answer or {}).get("name", "stranger")
        return {"message": Text(text=f"Hello, {name}!")}
