from typing import Any

from pydantic import BaseModel

from apcore_mcp import Image

RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


class Empty(BaseModel):
    pass


class Out(BaseModel):
    image: Image


class ImageContent:
    description = "Returns a 1x1 red PNG image"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"image": Image(data=RED_PIXEL_PNG, mimeType="image/png")}
