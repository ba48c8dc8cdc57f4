from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, elicit


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredMultiRound:
    description = "Asks two questions, one round after the other"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        first = await elicit(
            context,
            "Step 1: What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="step1",
        )
        second = await elicit(
            context,
            "Step 2: What is your favorite color?",
            {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
            key="step2",
        )
        name, color = (first or {}).get("name"), (second or {}).get("color")
        return {"message": Text(text=f"{name} likes {color}")}
