"""apcore behaviour annotations rendered as MCP hints, tool ``_meta`` and OpenAI text."""

from __future__ import annotations

from typing import Any

# The MCP defaults, which are also apcore's defaults for the same four behaviours.
DEFAULT_HINTS: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": True,
}

_HINT_FIELDS = (
    ("readonly", "readOnlyHint"),
    ("destructive", "destructiveHint"),
    ("idempotent", "idempotentHint"),
    ("open_world", "openWorldHint"),
)

# Order and defaults of the fields shown in the OpenAI description suffix.
_SUFFIX_DEFAULTS = (
    ("readonly", False),
    ("destructive", False),
    ("idempotent", False),
    ("requires_approval", False),
    ("open_world", True),
)


def to_hints(annotations: Any | None) -> dict[str, bool]:
    """MCP ``ToolAnnotations`` hints (wire names) for apcore ``ModuleAnnotations`` or ``None``."""
    if annotations is None:
        return dict(DEFAULT_HINTS)
    return {hint: bool(getattr(annotations, field, DEFAULT_HINTS[hint])) for field, hint in _HINT_FIELDS}


def requires_approval(annotations: Any | None) -> bool:
    """Whether the module asks for human approval before it runs."""
    return bool(getattr(annotations, "requires_approval", False))


def is_streaming(annotations: Any | None) -> bool:
    """Whether the module can stream partial results."""
    return bool(getattr(annotations, "streaming", False))


def to_tool_meta(annotations: Any | None) -> dict[str, Any]:
    """apcore behaviours with no MCP hint, published in the tool's ``_meta``.

    Both keys are always present so a client can rely on them.
    """
    return {
        "apcore/requiresApproval": requires_approval(annotations),
        "apcore/streaming": is_streaming(annotations),
    }


def to_description_suffix(annotations: Any | None) -> str:
    """``"\\n\\n[Annotations: readonly=true, ...]"`` listing only non-default values, or ``""``."""
    if annotations is None:
        return ""
    parts = []
    for field, default in _SUFFIX_DEFAULTS:
        value = bool(getattr(annotations, field, default))
        if value != default:
            parts.append(f"{field}={'true' if value else 'false'}")
    return f"\n\n[Annotations: {', '.join(parts)}]" if parts else ""
