from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, elicit

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredRequestState:
    description = "Asks for a confirmation; the answer comes back with the sealed request state"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        answer = await elicit(context, "Please confirm", SCHEMA, key="confirm")
        confirmed = bool((answer or {}).get("ok"))
        return {"message": Text(text=f"state-ok: confirmed={str(confirmed).lower()}")}
