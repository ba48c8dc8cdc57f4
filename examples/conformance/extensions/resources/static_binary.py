from typing import Any, ClassVar

from pydantic import BaseModel

RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


class Empty(BaseModel):
    pass


class Out(BaseModel):
    blob: str


class StaticBinary:
    description = "A static binary resource (a 1x1 red PNG)"
    input_schema = Empty
    output_schema = Out
    metadata: ClassVar[dict[str, Any]] = {
        "mcp_resource": {"uri": "test://static-binary", "mime_type": "image/png", "name": "static-binary"}
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"blob": RED_PIXEL_PNG}
