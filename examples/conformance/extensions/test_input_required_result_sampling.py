from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, sample


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredSampling:
    description = "Asks the client's model a question and returns its answer"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        question = [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}]
        answer = await sample(context, question, max_tokens=100, key="capital_question")
        content = (answer or {}).get("content") or {}
        text = content.get("text", "") if isinstance(content, dict) else ""
        return {"message": Text(text=f"The model answered: {text}")}
