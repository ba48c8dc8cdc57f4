from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, elicit


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredTamperedState:
    description = "Asks a question; a retry with an altered request state is refused"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        answer = await elicit(
            context,
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="user_name",
        )
        return {"message": Text(text=f"Hello, {(answer or {}).get('name')}!")}
