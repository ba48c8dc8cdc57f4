from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, call_context

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class ElicitationDefaults:
    description = "Asks the user with a form whose fields all have default values"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        call = call_context(context)
        answer = await call.elicit_result("Please review your details", SCHEMA) if call is not None else None
        answer = answer or {}
        text = f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"
        return {"message": Text(text=text)}
