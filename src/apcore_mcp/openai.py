"""OpenAI tool definitions (plain dicts; the ``openai`` package is never imported)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from apcore_mcp.behaviour import to_description_suffix
from apcore_mcp.bridge import registry_of
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.records import ToolRecord

logger = logging.getLogger(__name__)

_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


def normalize_tool_name(module_id: str) -> str:
    """``image.resize`` -> ``image-resize`` (OpenAI names allow ``[a-zA-Z0-9_-]`` only).

    Raises:
        ValueError: if the id already holds a ``-``, which would make the mapping ambiguous.
    """
    if "-" in module_id:
        raise ValueError(f"Module id must not contain '-': {module_id!r} (reserved for OpenAI names)")
    return module_id.replace(".", "-")


def denormalize_tool_name(name: str) -> str:
    """The module id behind an OpenAI function name: ``image-resize`` -> ``image.resize``."""
    return name.replace("-", ".")


def check_filters(tags: Sequence[str] | None, prefix: str | None) -> None:
    """Raise ``ValueError`` for an empty tag or an empty prefix."""
    if tags is not None:
        if isinstance(tags, str):
            raise TypeError("tags must be a list of strings, not a single string")
        if any(not isinstance(tag, str) or not tag for tag in tags):
            raise ValueError("Tag values must not be empty")
    if prefix is not None and (not isinstance(prefix, str) or not prefix):
        raise ValueError("prefix must not be empty")


def select_records(
    records: Iterable[ToolRecord], *, tags: Sequence[str] | None = None, prefix: str | None = None
) -> list[ToolRecord]:
    """Records carrying every tag in ``tags`` whose name starts with ``prefix``."""
    wanted = set(tags or ())
    return [
        record
        for record in records
        if wanted.issubset(record.tags) and (prefix is None or record.name.startswith(prefix))
    ]


def to_openai_tool(record: ToolRecord, *, embed_annotations: bool = False, strict: bool = False) -> dict[str, Any]:
    """One OpenAI ``{"type": "function", "function": {...}}`` definition."""
    description = record.description
    if embed_annotations:
        description += to_description_suffix(record.annotations)
    function: dict[str, Any] = {
        "name": normalize_tool_name(record.name),
        "description": description,
        "parameters": to_strict_schema(record.input_schema, record.name) if strict else record.input_schema,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def to_openai_tools(
    registry_or_executor: Any,
    *,
    embed_annotations: bool = False,
    strict: bool = False,
    tags: Sequence[str] | None = None,
    prefix: str | None = None,
) -> list[dict[str, Any]]:
    """OpenAI tool definitions for every module of a Registry (or an Executor's registry).

    ``strict`` applies OpenAI strict mode; ``embed_annotations`` appends the non-default
    behaviour annotations to each description; ``tags`` (all must match) and ``prefix``
    filter modules. A module whose schema cannot be converted is skipped with a warning.

    Raises:
        TypeError: ``registry_or_executor`` is neither a Registry nor an Executor.
        ValueError: an empty tag or prefix.
    """
    registry = registry_of(registry_or_executor)
    check_filters(tags, prefix)
    catalog = ToolCatalog(registry, tags=tags, prefix=prefix)
    catalog.load()
    return tools_from_records(catalog.records(), embed_annotations=embed_annotations, strict=strict)


def tools_from_records(
    records: Iterable[ToolRecord], *, embed_annotations: bool = False, strict: bool = False
) -> list[dict[str, Any]]:
    """Render records, skipping (with a warning) any whose id cannot be an OpenAI name."""
    tools = []
    for record in records:
        try:
            tools.append(to_openai_tool(record, embed_annotations=embed_annotations, strict=strict))
        except ValueError as exc:
            logger.warning("Skipping module %s for OpenAI: %s", record.name, exc)
    return tools


# -- strict mode ------------------------------------------------------------------------------


def to_strict_schema(schema: dict[str, Any], tool_name: str = "") -> dict[str, Any]:
    """OpenAI strict mode: closed objects, every property required, optional ones nullable.

    Also drops ``default`` and ``x-*`` keywords, recursively (properties, items, branches).
    """
    result = _strict(schema, tool_name)
    assert isinstance(result, dict)
    return result


def _strict(node: Any, tool_name: str) -> Any:
    if isinstance(node, list):
        return [_strict(item, tool_name) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default" or key.startswith("x-"):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _strict(prop, tool_name) for name, prop in value.items()}
        elif key in ("items", "additionalProperties", "not", *_BRANCH_KEYS, "prefixItems"):
            out[key] = _strict(value, tool_name)
        else:
            out[key] = value
    if _is_object(out):
        _close_object(out, node, tool_name)
    return out


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _close_object(out: dict[str, Any], original: dict[str, Any], tool_name: str) -> None:
    if original.get("additionalProperties") not in (None, False):
        logger.warning(
            "Tool %s: an object allows additional properties; strict mode closes it and may not fit", tool_name
        )
    out["additionalProperties"] = False
    properties: dict[str, Any] = out.setdefault("properties", {})
    required = set(original.get("required", []))
    for name, prop in properties.items():
        if name not in required:
            properties[name] = _nullable(prop)
    out["required"] = list(properties)


def _nullable(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    kind = prop.get("type")
    if isinstance(kind, str):
        if kind == "null":
            return prop
        widened = {**prop, "type": [kind, "null"]}
    elif isinstance(kind, list):
        widened = prop if "null" in kind else {**prop, "type": [*kind, "null"]}
    elif any(key in prop for key in _BRANCH_KEYS) and _admits_null(prop):
        return prop
    else:
        return {"anyOf": [prop, {"type": "null"}]}
    if "enum" in widened and None not in widened["enum"]:
        widened["enum"] = [*widened["enum"], None]
    return widened


def _admits_null(prop: dict[str, Any]) -> bool:
    branches = prop.get("anyOf") or prop.get("oneOf") or []
    return any(isinstance(branch, dict) and branch.get("type") == "null" for branch in branches)
