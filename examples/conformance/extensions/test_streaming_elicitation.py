from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, elicit, report_progress


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class StreamingElicitation:
    description = "Reports progress, then asks the user a question"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await report_progress(context, 1, 2, "about to ask")
        answer = await elicit(
            context,
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="user_name",
        )
        await report_progress(context, 2, 2, "answered")
        return {"message": Text(text=f"Hello, {(answer or {}).get('name')}!")}
