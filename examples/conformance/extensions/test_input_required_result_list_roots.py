from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, list_roots


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class InputRequiredListRoots:
    description = "Asks the client for its roots and lists them"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        roots = await list_roots(context, key="client_roots") or []
        uris = ", ".join(str(root.get("uri")) for root in roots) or "none"
        return {"message": Text(text=f"Client roots: {uris}")}
