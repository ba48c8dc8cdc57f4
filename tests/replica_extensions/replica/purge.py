"""replica.purge: destructive and approval-gated (simulated)."""

import os
from typing import Any

from apcore import ModuleAnnotations
from pydantic import BaseModel


class PurgeIn(BaseModel):
    target: str


class PurgeOut(BaseModel):
    purged: str
    replica: str


class Purge:
    description = "Purge a target (asks for approval first)"
    input_schema = PurgeIn
    output_schema = PurgeOut
    annotations = ModuleAnnotations(destructive=True, requires_approval=True, idempotent=False)

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        return {"purged": inputs["target"], "replica": os.environ.get("REPLICA_NAME", str(os.getpid()))}
