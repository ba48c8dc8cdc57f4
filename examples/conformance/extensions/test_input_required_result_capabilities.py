from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, request_inputs

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredCapabilities:
    description = "Asks only what the client declared it can answer"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        question = [{"role": "user", "content": {"type": "text", "text": "Say something"}}]
        answers = await request_inputs(
            context,
            {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA},
                },
                "model_says": {"method": "sampling/createMessage", "params": {"messages": question, "maxTokens": 20}},
                "client_roots": {"method": "roots/list", "params": {}},
            },
        )
        asked = sorted(key for key, answer in answers.items() if answer is not None)
        return {"message": Text(text=f"Answered: {', '.join(asked) or 'nothing the client can answer'}")}
