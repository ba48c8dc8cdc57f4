"""The internal tool model: one record per module, built once, rendered to each wire format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types
from apcore import ModuleDescriptor

from apcore_mcp.tools import behaviour
from apcore_mcp.tools.content import OutputLayout, output_layout
from apcore_mcp.tools.resources import ResourceSpec, resource_spec
from apcore_mcp.tools.schema import to_input_schema, to_output_schema
from apcore_mcp.tools.views import ServedView

PUBLIC_META_KEY = "mcp_public"
"""The module metadata key declaring a tool public or never public (``calls/signin.py``)."""
MAX_TOOL_NAME_LENGTH = 128
"""The MCP limit on a tool name (characters ``[A-Za-z0-9_.-]``, which every apcore id satisfies)."""


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """Everything a client is told about one module, precomputed.

    ``input_schema``/``output_schema`` are already inlined; ``annotations`` is apcore's own
    object, kept for renderers that need more than the MCP hints (OpenAI, the explorer).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    hints: dict[str, bool]
    meta: dict[str, Any]
    annotations: Any | None = None
    tags: tuple[str, ...] = ()
    documentation: str = ""
    resource: ResourceSpec | None = None
    """Set when the module serves a resource (read through the Executor) instead of a tool."""
    view: ServedView | None = None
    """The module's MCP Apps view (``tools/views.py``), linked from the tool's ``_meta.ui``."""
    public: bool | None = None
    """The module's own ``mcp_public`` metadata (``calls/signin.py``); ``None``: it says nothing."""
    examples: tuple[Any, ...] = ()
    """The module's own ``ModuleExample`` objects (generated skills show them)."""
    layout: OutputLayout = field(init=False, repr=False, compare=False)
    mcp_tool: types.Tool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once: a call renders its output with the layout, tools/list costs a list copy.
        object.__setattr__(self, "layout", output_layout(self.output_schema))
        object.__setattr__(self, "mcp_tool", to_mcp_tool(self))

    @property
    def has_output_schema(self) -> bool:
        """Whether calls carry ``structuredContent`` (an object schema beyond content blocks)."""
        return self.layout.structured

    @property
    def streaming(self) -> bool:
        return bool(self.meta.get("apcore/streaming"))

    @property
    def requires_approval(self) -> bool:
        return bool(self.meta.get("apcore/requiresApproval"))


def build_record(descriptor: ModuleDescriptor) -> ToolRecord:
    """Build the record for an apcore ``ModuleDescriptor``.

    Raises:
        ValueError: if a schema holds a circular or too-deep ``$ref``.
        KeyError: if a schema references a missing definition.
    """
    module_annotations = descriptor.annotations
    output_schema = to_output_schema(descriptor.output_schema)
    if output_schema.get("type") != "object":
        # MCP structured content is always a JSON object; anything else stays text-only.
        output_schema = {}
    return ToolRecord(
        name=descriptor.module_id,
        description=descriptor.description or "",
        input_schema=to_input_schema(descriptor.input_schema),
        output_schema=output_schema,
        hints=behaviour.to_hints(module_annotations),
        meta=behaviour.to_tool_meta(module_annotations),
        annotations=module_annotations,
        tags=tuple(descriptor.tags or ()),
        documentation=descriptor.documentation or "",
        resource=resource_spec(descriptor.module_id, descriptor.description or "", descriptor.metadata),
        public=declared_public(descriptor.metadata),
        examples=tuple(descriptor.examples or ()),
    )


def declared_public(metadata: Mapping[str, Any] | None) -> bool | None:
    """A module's ``mcp_public`` metadata: ``True``, ``False`` or absent (``None``).

    Raises:
        ValueError: it is not a boolean (a typo must not make a tool public or protected by accident).
    """
    value = (metadata or {}).get(PUBLIC_META_KEY)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{PUBLIC_META_KEY} must be true or false, got {value!r}")
    return value


def to_mcp_tool(record: ToolRecord) -> types.Tool:
    """Render a record as an MCP ``Tool``."""
    return types.Tool(
        name=record.name,
        description=record.description,
        input_schema=record.input_schema,
        output_schema=record.layout.structured_schema or None,
        annotations=types.ToolAnnotations(
            read_only_hint=record.hints["readOnlyHint"],
            destructive_hint=record.hints["destructiveHint"],
            idempotent_hint=record.hints["idempotentHint"],
            open_world_hint=record.hints["openWorldHint"],
        ),
        _meta={**record.meta, **record.view.tool_meta()} if record.view is not None else record.meta,
    )
