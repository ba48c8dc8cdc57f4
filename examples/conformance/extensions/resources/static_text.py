from typing import Any, ClassVar

from pydantic import BaseModel


class Empty(BaseModel):
    pass


class Out(BaseModel):
    text: str


class StaticText:
    description = "A static text resource"
    input_schema = Empty
    output_schema = Out
    metadata: ClassVar[dict[str, Any]] = {
        "mcp_resource": {"uri": "test://static-text", "mime_type": "text/plain", "name": "static-text"}
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": "This is the content of the static text resource."}
