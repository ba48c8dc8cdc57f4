from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, json_schema_model

# A schema written as a JSON Schema 2020-12 document: it names its dialect ($schema), so the
# server lists it as written ($defs, $ref, $anchor, allOf/anyOf, if/then/else kept) and
# validates calls against it.
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


class Out(BaseModel):
    message: Text


class JsonSchema202012Tool:
    description = "Tool with JSON Schema 2020-12 features"
    input_schema = json_schema_model(SCHEMA, "ContactInput")
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"message": Text(text=f"Contact {inputs.get('name', 'someone')} by {inputs.get('contactMethod')}")}
