"""protocol_error_job: a task whose work cannot produce a result, so the task fails (status
`failed` with a JSON-RPC error, no result): it requires an answer from the client, and a task
cannot ask the client anything."""

from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel

from apcore_mcp import request_inputs


class Empty(BaseModel):
    pass


class ProtocolErrorJob:
    description = "Needs the client's answer, which a task cannot get: its task fails"
    input_schema = Empty
    output_schema = Empty
    annotations = ModuleAnnotations(extra={"mcp.task_support": "optional"})

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {}}
        question = {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Go on?", "requestedSchema": schema},
        }
        await request_inputs(context, {"go": question}, required=True)
        return {}
