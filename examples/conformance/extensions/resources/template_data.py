from typing import Any, ClassVar

from pydantic import BaseModel


class In(BaseModel):
    id: str


class Out(BaseModel):
    id: str
    templateTest: bool
    data: str


class TemplateData:
    description = "Data for an id, from the template test://template/{id}/data"
    input_schema = In
    output_schema = Out
    metadata: ClassVar[dict[str, Any]] = {
        "mcp_resource": {
            "uri": "test://template/{id}/data",
            "mime_type": "application/json",
            "name": "template-data",
            "complete": {"id": ["123", "456", "789"]},
        }
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"id": inputs["id"], "templateTest": True, "data": f"Data for ID: {inputs['id']}"}
