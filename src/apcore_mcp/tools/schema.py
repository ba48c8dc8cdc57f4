"""JSON Schema clean-up for tool definitions: ``$ref`` inlining and a guaranteed object root.

Pydantic emits nested models as ``{"$ref": "#/$defs/Name"}`` plus a root ``$defs`` table.
Many MCP and OpenAI clients do not resolve references, so every tool schema is served
self-contained. All functions here are pure: inputs are never mutated.
"""

from __future__ import annotations

import copy
from typing import Any

MAX_REF_DEPTH = 32
_DEF_TABLES = ("$defs", "definitions")


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``schema`` with every local ``$ref`` replaced by its definition.

    Both ``#/$defs/X`` and ``#/definitions/X`` are resolved, at any depth (properties,
    array items, ``oneOf``/``anyOf``/``allOf``, nested definitions). Every use of a
    definition gets its own copy, and the definition tables are dropped.

    Raises:
        ValueError: on a circular reference (the message names the cycle, ``A -> B -> A``)
            or when references nest deeper than ``MAX_REF_DEPTH``.
        KeyError: when a reference names a definition that does not exist.
    """
    defs: dict[str, Any] = {}
    for table in _DEF_TABLES:
        found = schema.get(table)
        if isinstance(found, dict):
            defs.update({f"#/{table}/{name}": body for name, body in found.items()})
    body = {key: value for key, value in schema.items() if key not in _DEF_TABLES}
    resolved = _resolve(body, defs, ())
    assert isinstance(resolved, dict)
    return resolved


def _resolve(node: object, defs: dict[str, Any], chain: tuple[str, ...]) -> object:
    if isinstance(node, list):
        return [_resolve(item, defs, chain) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        return _resolve_ref(node, ref, defs, chain)
    return {key: _resolve(value, defs, chain) for key, value in node.items()}


def _resolve_ref(node: dict[str, Any], ref: str, defs: dict[str, Any], chain: tuple[str, ...]) -> object:
    name = ref.rsplit("/", 1)[-1]
    if ref in chain:
        names = [r.rsplit("/", 1)[-1] for r in chain[chain.index(ref) :]]
        raise ValueError(f"Circular reference: {' -> '.join([*names, name])}")
    if len(chain) >= MAX_REF_DEPTH:
        raise ValueError(f"Maximum $ref resolution depth ({MAX_REF_DEPTH}) exceeded at {name}")
    if ref not in defs:
        raise KeyError(f"$ref target not found: {name}")
    resolved = _resolve(defs[ref], defs, (*chain, ref))
    # Keywords written beside the $ref (a description, a default) refine the definition.
    siblings = {key: _resolve(value, defs, chain) for key, value in node.items() if key != "$ref"}
    if not siblings:
        return resolved
    if not isinstance(resolved, dict):
        return siblings
    return {**resolved, **siblings}


def is_declared_dialect(schema: dict[str, Any] | None) -> bool:
    """A schema naming its dialect (``$schema``) was written as a JSON Schema document on purpose:
    it is served as written (``$defs``, ``$ref``, ``$anchor``, ``if``/``then`` kept), not inlined."""
    return bool(schema) and isinstance(schema, dict) and "$schema" in schema


def to_input_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The schema a client sees for a tool's arguments: inlined, with an object root.

    A schema that declares its dialect (``$schema``) is kept as written (see ``is_declared_dialect``).
    """
    if is_declared_dialect(schema):
        assert schema is not None
        return copy.deepcopy(schema) if schema.get("type") == "object" else {"type": "object", **copy.deepcopy(schema)}
    inlined = inline_refs(schema or {})
    if not inlined:
        return {"type": "object", "properties": {}}
    if "type" not in inlined:
        return {"type": "object", **inlined}
    return inlined


def to_output_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The schema of a tool's structured result: inlined (or kept, see ``is_declared_dialect``), or ``{}``."""
    if is_declared_dialect(schema):
        assert schema is not None
        return copy.deepcopy(schema)
    return inline_refs(schema) if schema else {}
