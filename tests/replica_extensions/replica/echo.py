"""replica.echo: the text back, and which replica answered."""

import os
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel


class EchoIn(BaseModel):
    text: str


class EchoOut(BaseModel):
    text: str
    replica: str


class Echo:
    description = "Echo the text and name the replica that answered"
    input_schema = EchoIn
    output_schema = EchoOut
    annotations = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        return {"text": inputs["text"], "replica": os.environ.get("REPLICA_NAME", str(os.getpid()))}
