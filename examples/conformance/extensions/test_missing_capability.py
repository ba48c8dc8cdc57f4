from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, sample


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class MissingCapability:
    description = "Needs the client's sampling capability; fails with -32021 without it"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        question = [{"role": "user", "content": {"type": "text", "text": "Hello"}}]
        answer = await sample(context, question, max_tokens=20, required=True)
        return {"message": Text(text=f"Sampled: {(answer or {}).get('content')}")}
