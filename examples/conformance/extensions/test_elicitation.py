from typing import Any

from pydantic import BaseModel, Field

from apcore_mcp import Text, call_context

SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


class In(BaseModel):
    message: str = Field(description="The message to show the user")


class Out(BaseModel):
    message: Text


class Elicitation:
    description = "Asks the user for a name and an email address"
    input_schema = In
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        call = call_context(context)
        answer = await call.elicit_result(inputs["message"], SCHEMA) if call is not None else None
        if answer is None:
            return {"message": Text(text="User response: the client cannot be asked")}
        return {"message": Text(text=f"User response: action={answer.get('action')}, content={answer.get('content')}")}
