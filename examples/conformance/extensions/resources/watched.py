from typing import Any, ClassVar

from pydantic import BaseModel


class Empty(BaseModel):
    pass


class Out(BaseModel):
    text: str


class Watched:
    description = "A resource clients may subscribe to"
    input_schema = Empty
    output_schema = Out
    metadata: ClassVar[dict[str, Any]] = {
        "mcp_resource": {"uri": "test://watched-resource", "mime_type": "text/plain", "name": "watched-resource"}
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": "Watched resource content"}
