from typing import Any, ClassVar

from pydantic import BaseModel


class Empty(BaseModel):
    pass


class Out(BaseModel):
    text: str


class Example:
    description = "An example text resource"
    input_schema = Empty
    output_schema = Out
    metadata: ClassVar[dict[str, Any]] = {
        "mcp_resource": {"uri": "test://example-resource", "mime_type": "text/plain", "name": "example-resource"}
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": "This is an example resource."}
