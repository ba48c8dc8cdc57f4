import json
from typing import Any

from pydantic import BaseModel

from apcore_mcp import EmbeddedResource, Image, Text

RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


class Empty(BaseModel):
    pass


class Out(BaseModel):
    intro: Text
    image: Image
    data: EmbeddedResource


class MultipleContentTypes:
    description = "Returns text, an image and an embedded JSON resource"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        payload = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
        return {
            "intro": Text(text="Multiple content types test:"),
            "image": Image(data=RED_PIXEL_PNG, mimeType="image/png"),
            "data": EmbeddedResource.text_resource("test://mixed-content-resource", payload, "application/json"),
        }
