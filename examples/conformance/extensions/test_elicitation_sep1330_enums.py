from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, call_context

SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class ElicitationEnums:
    description = "Asks the user to pick from single- and multi-select enums, titled and untitled"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        call = call_context(context)
        answer = await call.elicit_result("Please choose", SCHEMA) if call is not None else None
        answer = answer or {}
        text = f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"
        return {"message": Text(text=text)}
