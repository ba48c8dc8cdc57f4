"""Large generated catalogs for tool search: plausible, varied tools registered without building pydantic models.

``register_generated(registry, n)`` registers ``gen.<verb>_<object>_<n>`` modules whose
descriptions and parameters combine a fixed vocabulary, deterministically. Their input
contract is a JSON Schema (``JsonSchemaModel``), as an upstream tool's is, so 10,000 of them
register in about a second. Shared by ``tests/tools/test_search.py`` and the search workload.
"""

from __future__ import annotations

from typing import Any

from apcore_mcp.upstream.module import JsonSchemaModel, ResultOutput

VERBS = (
    "create", "archive", "list", "update", "export", "import", "sync", "validate", "merge", "rename",
    "share", "lock", "restore", "compress", "translate", "summarize", "approve", "assign", "tag", "publish",
)  # fmt: skip
OBJECTS = (
    "invoice", "customer", "ticket", "order", "report", "user", "project", "calendar", "email", "payment",
    "contract", "shipment", "product", "review", "comment", "image", "budget", "alert", "backup", "playlist",
)  # fmt: skip
CONTEXTS = (
    "for a team workspace", "with an audit trail", "in bulk", "by id", "across regions", "for the current month",
    "using a saved template", "with retries", "in the sandbox", "for compliance",
)  # fmt: skip


class GeneratedTool:
    """A trivial module whose contract is a JSON Schema."""

    def __init__(self, description: str, schema: dict[str, Any]) -> None:
        self.description = description
        self.input_schema = JsonSchemaModel(schema)
        self.output_schema = ResultOutput(None)
        self.tags = ["generated"]

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"_mcp_result": {"content": [{"type": "text", "text": "ok"}]}}


def generated(i: int) -> tuple[str, str, dict[str, Any]]:
    """(module id, description, input schema) of generated tool ``i``."""
    verb = VERBS[i % len(VERBS)]
    obj = OBJECTS[(i // len(VERBS)) % len(OBJECTS)]
    context = CONTEXTS[(i // (len(VERBS) * len(OBJECTS))) % len(CONTEXTS)]
    description = f"{verb.capitalize()} {obj} records {context}."
    schema = {
        "type": "object",
        "properties": {
            f"{obj}_id": {"type": "string", "description": f"The {obj} to {verb}"},
            "limit": {"type": "integer", "description": "How many records at most"},
            "note": {"type": "string", "description": f"A note kept with the {verb}"},
        },
        "required": [f"{obj}_id"],
    }
    return f"gen.{verb}_{obj}_{i}", description, schema


def register_generated(registry: Any, n: int) -> list[str]:
    """Register ``n`` generated tools; their module ids."""
    ids = []
    for i in range(n):
        module_id, description, schema = generated(i)
        registry.register(module_id, GeneratedTool(description, schema))
        ids.append(module_id)
    return ids
