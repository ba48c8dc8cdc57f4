"""replica.ask: asks the user a question by elicitation (None when the client cannot be asked)."""

from typing import Any

from pydantic import BaseModel

from apcore_mcp import elicit


class AskIn(BaseModel):
    question: str


class AskOut(BaseModel):
    asked: bool
    answer: str | None = None


class Ask:
    description = "Ask the user a question"
    input_schema = AskIn
    output_schema = AskOut

    async def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        content = await elicit(context, inputs["question"], schema)
        return {"asked": content is not None, "answer": (content or {}).get("answer")}
