from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, request_inputs

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredMultipleInputs:
    description = "Asks for a name, a model-written greeting and the client's roots in one round"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        greeting = [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}]
        answers = await request_inputs(
            context,
            {
                "user_name": {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": "What is your name?", "requestedSchema": NAME_SCHEMA},
                },
                "greeting": {"method": "sampling/createMessage", "params": {"messages": greeting, "maxTokens": 50}},
                "client_roots": {"method": "roots/list", "params": {}},
            },
        )
        received = sorted(key for key, answer in answers.items() if answer is not None)
        return {"message": Text(text=f"Received answers for: {', '.join(received)}")}
