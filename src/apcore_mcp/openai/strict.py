"""OpenAI strict mode: the schema conversion and the limits a strict schema must stay within."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("apcore_mcp.openai")

BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


@dataclass(frozen=True, slots=True)
class StrictLimits:
    """OpenAI's documented limits on a strict schema (Structured Outputs guide, "Supported schemas").

    ``max_depth`` counts object levels from the root object (1); ``max_properties`` the
    properties of every object together; ``max_enum_values`` the values of every enum together;
    ``max_total_chars`` the characters of every property name, definition name, enum value and
    const value together; a string enum of more than ``large_enum_values`` values may hold at most
    ``max_large_enum_chars`` characters.
    """

    max_depth: int = 10
    max_properties: int = 5_000
    max_enum_values: int = 1_000
    max_total_chars: int = 120_000
    large_enum_values: int = 250
    max_large_enum_chars: int = 15_000


OPENAI_LIMITS = StrictLimits()


def to_strict_schema(schema: dict[str, Any], tool_name: str = "") -> dict[str, Any]:
    """OpenAI strict mode: closed objects, every property required, optional ones nullable.

    Also drops ``default`` and ``x-*`` keywords, recursively (properties, items, branches).
    """
    result = _strict(schema, tool_name)
    assert isinstance(result, dict)
    return result


def strict_problem(schema: dict[str, Any], limits: StrictLimits = OPENAI_LIMITS) -> str | None:
    """Why ``schema`` (already strict) exceeds OpenAI's strict limits, or ``None`` when it fits.

    The reason names the limit and the measured number, e.g. ``"12 object levels (limit 10)"``.
    """
    size = _Size()
    _measure(schema, 0, size, limits)
    checks = [
        (size.depth, limits.max_depth, "object levels"),
        (size.properties, limits.max_properties, "properties"),
        (size.enum_values, limits.max_enum_values, "enum values"),
        (size.chars, limits.max_total_chars, "characters of names, enum and const values"),
        (size.large_enum_chars, limits.max_large_enum_chars, "characters in one enum of over 250 values"),
    ]
    for measured, limit, what in checks:
        if measured > limit:
            return f"{measured} {what} (limit {limit})"
    return None


@dataclass(slots=True)
class _Size:
    depth: int = 0
    properties: int = 0
    enum_values: int = 0
    chars: int = 0
    large_enum_chars: int = 0


def _measure(node: object, depth: int, size: _Size, limits: StrictLimits) -> None:
    if isinstance(node, list):
        for item in node:
            _measure(item, depth, size, limits)
        return
    if not isinstance(node, dict):
        return
    if _is_object(node):
        depth += 1
        size.depth = max(size.depth, depth)
    properties = node.get("properties")
    if isinstance(properties, dict):
        size.properties += len(properties)
        size.chars += sum(len(name) for name in properties)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            size.chars += sum(len(name) for name in node[key])
    enum = node.get("enum")
    if isinstance(enum, list):
        size.enum_values += len(enum)
        text = sum(len(value) for value in enum if isinstance(value, str))
        size.chars += text
        if len(enum) > limits.large_enum_values:
            size.large_enum_chars = max(size.large_enum_chars, text)
    if isinstance(node.get("const"), str):
        size.chars += len(node["const"])
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for child in value.values():
                _measure(child, depth, size, limits)
        elif key in ("items", "additionalProperties", "not", "prefixItems", *BRANCH_KEYS):
            _measure(value, depth, size, limits)


def _strict(node: object, tool_name: str) -> object:
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
        elif key in ("items", "additionalProperties", "not", *BRANCH_KEYS, "prefixItems"):
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


def _nullable(prop: object) -> object:
    if not isinstance(prop, dict):
        return prop
    kind = prop.get("type")
    if isinstance(kind, str):
        if kind == "null":
            return prop
        widened = {**prop, "type": [kind, "null"]}
    elif isinstance(kind, list):
        widened = prop if "null" in kind else {**prop, "type": [*kind, "null"]}
    elif any(key in prop for key in BRANCH_KEYS) and _admits_null(prop):
        return prop
    else:
        return {"anyOf": [prop, {"type": "null"}]}
    if "enum" in widened and None not in widened["enum"]:
        widened["enum"] = [*widened["enum"], None]
    return widened


def _admits_null(prop: dict[str, Any]) -> bool:
    branches = prop.get("anyOf") or prop.get("oneOf") or []
    return any(isinstance(branch, dict) and branch.get("type") == "null" for branch in branches)
