from typing import Any

from pydantic import BaseModel

from apcore_mcp import EmbeddedResource


class Empty(BaseModel):
    pass


class Out(BaseModel):
    resource: EmbeddedResource


class EmbeddedResourceTool:
    description = "Returns an embedded text resource"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        resource = EmbeddedResource.text_resource("test://embedded-resource", "This is an embedded resource content.")
        return {"resource": resource}
