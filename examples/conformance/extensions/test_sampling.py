from typing import Any

from pydantic import BaseModel, Field

from apcore_mcp import Text, sample


class In(BaseModel):
    prompt: str = Field(description="The prompt to send to the LLM")


class Out(BaseModel):
    message: Text


class Sampling:
    description = "Asks the client's model to answer a prompt"
    input_schema = In
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        messages = [{"role": "user", "content": {"type": "text", "text": inputs["prompt"]}}]
        answer = await sample(context, messages, max_tokens=100, required=True)
        content = (answer or {}).get("content") or {}
        text = content.get("text", "") if isinstance(content, dict) else ""
        return {"message": Text(text=f"LLM response: {text}")}
