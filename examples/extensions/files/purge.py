"""files.purge: a destructive operation that asks for approval (simulated: it deletes nothing)."""

from typing import Any, ClassVar

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field


class PurgeInput(BaseModel):
    directory: str = Field(description="Directory to clean up")
    older_than_days: int = Field(ge=1, description="Delete files older than this many days")
    dry_run: bool = Field(default=True, description="Only report what would be deleted")


class PurgeResult(BaseModel):
    directory: str
    deleted: int
    dry_run: bool


class Purge:
    description = "Delete old files from a directory (example: reports what it would delete)"
    input_schema = PurgeInput
    output_schema = PurgeResult
    tags: ClassVar[list[str]] = ["files"]
    annotations = ModuleAnnotations(destructive=True, requires_approval=True, idempotent=True)

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        return {"directory": inputs["directory"], "deleted": 0, "dry_run": True}
