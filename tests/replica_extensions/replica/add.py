"""replica.add: registers an echo module under a new id in this replica's registry (a live change)."""

import os
from typing import Any

from apcore import Context, ModuleAnnotations
from pydantic import BaseModel, Field


class AddIn(BaseModel):
    name: str = Field(pattern=r"^added\.[a-z][a-z0-9_]*$")


class AddOut(BaseModel):
    added: str
    replica: str


def _result(name: str) -> dict[str, Any]:
    return {"added": name, "replica": os.environ.get("REPLICA_NAME", str(os.getpid()))}


class Add:
    description = "Register a module named `added.<x>` in this replica's registry"
    input_schema = AddIn
    output_schema = AddOut
    annotations = ModuleAnnotations(idempotent=True)

    class Added:
        """What gets registered (nested: one module class per file)."""

        description = "A module added at run time"
        input_schema = AddIn
        output_schema = AddOut

        def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
            return _result(inputs["name"])

    def execute(self, inputs: dict[str, Any], context: Context) -> dict[str, Any]:
        registry = context.executor.registry
        if not registry.has(inputs["name"]):
            registry.register(inputs["name"], self.Added())
        return _result(inputs["name"])
