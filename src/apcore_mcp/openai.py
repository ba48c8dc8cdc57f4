"""OpenAI tool definitions (plain dicts; the ``openai`` package is never imported)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from apcore import Executor, Registry

from apcore_mcp.behaviour import to_description_suffix
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.records import ToolRecord
from apcore_mcp.schema import to_input_schema
from apcore_mcp.types import JSONValue, RegistryOrExecutor, registry_of

logger = logging.getLogger(__name__)

_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


MAX_NAME_LENGTH = 64
"""OpenAI's limit on a function name."""
SHORTENED_MARK = "--"
"""Separates a shortened name from its hash; never in a plain name (module id segments are never empty)."""
_HASH_LENGTH = 10


def normalize_tool_name(module_id: str) -> str:
    """``image.resize`` -> ``image-resize``: OpenAI names allow ``[a-zA-Z0-9_-]`` and at most 64 characters.

    An id whose name would be longer keeps its first 52 characters, then ``--`` and 10 hex
    digits of its SHA-256: deterministic, unique in practice, and mapped back by a lookup
    (``openai_names``, ``from_openai_call``), not by ``denormalize_tool_name``.

    Raises:
        ValueError: if the id already holds a ``-``, which would make the mapping ambiguous.
    """
    if "-" in module_id:
        raise ValueError(f"Module id must not contain '-': {module_id!r} (reserved for OpenAI names)")
    name = module_id.replace(".", "-")
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(module_id.encode()).hexdigest()[:_HASH_LENGTH]
    return name[: MAX_NAME_LENGTH - len(SHORTENED_MARK) - _HASH_LENGTH] + SHORTENED_MARK + digest


def denormalize_tool_name(name: str) -> str:
    """The module id behind an OpenAI function name: ``image-resize`` -> ``image.resize``.

    Raises:
        ValueError: ``name`` was shortened (an id over 64 characters): resolve it with
            ``openai_names`` or ``from_openai_call``, which know the ids.
    """
    if SHORTENED_MARK in name:
        raise ValueError(f"{name!r} is a shortened name; look it up with openai_names() or from_openai_call()")
    return name.replace("-", ".")


def openai_names(module_ids: Iterable[str]) -> dict[str, str]:
    """``{OpenAI name: module id}`` for ``module_ids`` (ids holding ``-`` have no name and are left out).

    Raises:
        ValueError: two ids map to the same name (a hash collision: never seen, but never silent).
    """
    names: dict[str, str] = {}
    for module_id in module_ids:
        if "-" in module_id:
            continue
        name = normalize_tool_name(module_id)
        if names.setdefault(name, module_id) != module_id:
            raise ValueError(f"Modules {names[name]!r} and {module_id!r} have the same OpenAI name {name!r}")
    return names


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
    registry_or_executor: RegistryOrExecutor,
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
    seen: dict[str, str] = {}
    for record in records:
        try:
            tool = to_openai_tool(record, embed_annotations=embed_annotations, strict=strict)
        except ValueError as exc:
            logger.warning("Skipping module %s for OpenAI: %s", record.name, exc)
            continue
        name = tool["function"]["name"]
        if seen.setdefault(name, record.name) != record.name:
            logger.warning("Skipping module %s for OpenAI: its name %s is taken by %s", record.name, name, seen[name])
            continue
        tools.append(tool)
    return tools


# -- strict mode ------------------------------------------------------------------------------


def to_strict_schema(schema: dict[str, Any], tool_name: str = "") -> dict[str, Any]:
    """OpenAI strict mode: closed objects, every property required, optional ones nullable.

    Also drops ``default`` and ``x-*`` keywords, recursively (properties, items, branches).
    """
    result = _strict(schema, tool_name)
    assert isinstance(result, dict)
    return result


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


# -- the way back: a model's tool call -> (module id, arguments) ---------------------------------


def from_openai_call(
    name: str, arguments: str | Mapping[str, Any] | None, source: Registry | Executor | ToolCatalog
) -> tuple[str, dict[str, Any]]:
    """Turn a model's tool call back into ``(module_id, arguments)`` for ``Executor.call``.

    ``name`` is the function name the model called (shortened names included) and
    ``arguments`` its arguments, as the JSON text OpenAI sends or already decoded. Strict mode
    makes every optional field required-and-nullable, so a model sends ``null`` for the fields
    it means to leave out; those nulls are dropped, recursively, wherever the module's own
    schema does not accept null (a null the schema allows is kept). ``source`` is the Registry
    (or Executor) the tools were made from, or a ``ToolCatalog``.

    Raises:
        ValueError: an unknown name, or arguments that are not a JSON object.
    """
    ids, schema_of = _lookup(source)
    module_id = openai_names(ids).get(name)
    if module_id is None:
        raise ValueError(f"No tool is named {name!r}")
    decoded = json.loads(arguments) if isinstance(arguments, str | bytes) else dict(arguments or {})
    if not isinstance(decoded, dict):
        raise ValueError("Tool call arguments must be a JSON object")
    cleaned = drop_strict_nulls(decoded, schema_of(module_id))
    assert isinstance(cleaned, dict)  # an object comes back an object
    return module_id, cleaned


def _lookup(source: Registry | Executor | ToolCatalog) -> tuple[list[str], Callable[[str], dict[str, Any]]]:
    """The module ids of ``source`` and how to get one's (inlined) input schema."""
    if isinstance(source, ToolCatalog):
        catalog = source

        def from_catalog(module_id: str) -> dict[str, Any]:
            record = catalog.get(module_id)
            return record.input_schema if record is not None else {}

        return [record.name for record in catalog.records()], from_catalog
    registry = registry_of(source)

    def from_registry(module_id: str) -> dict[str, Any]:
        descriptor = registry.get_definition(module_id)  # one module, once per call: not the whole registry
        return to_input_schema(descriptor.input_schema) if descriptor is not None else {}

    return list(registry.list()), from_registry


def drop_strict_nulls(value: JSONValue, schema: object) -> JSONValue:
    """``value`` without the nulls strict mode asked for: optional properties whose schema refuses null."""
    if not isinstance(schema, dict):
        return value
    branch = _branch_for(value, schema)
    if isinstance(value, dict):
        properties = branch.get("properties") or {}
        required = set(branch.get("required") or ())
        return {
            key: drop_strict_nulls(item, properties.get(key))
            for key, item in value.items()
            if not (item is None and key not in required and not schema_admits_null(properties.get(key)))
        }
    if isinstance(value, list) and isinstance(branch.get("items"), dict):
        return [drop_strict_nulls(item, branch["items"]) for item in value]
    return value


def schema_admits_null(schema: object) -> bool:
    """Whether ``schema`` accepts ``null`` (an absent or empty schema accepts anything)."""
    if not isinstance(schema, dict) or not schema:
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    if "const" in schema:
        return schema["const"] is None
    branches = [branch for key in _BRANCH_KEYS if key != "allOf" for branch in schema.get(key) or ()]
    if branches:
        return any(schema_admits_null(branch) for branch in branches)
    return kind is None and not any(key in schema for key in ("properties", "items", "enum"))


def _branch_for(value: object, schema: dict[str, Any]) -> dict[str, Any]:
    """For ``anyOf``/``oneOf``, the branch of the value's JSON type (``Model | None`` -> the object branch)."""
    wanted = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, dict) and wanted is not None and _has_type(branch, wanted):
                return branch
    return schema


def _has_type(schema: dict[str, Any], wanted: str) -> bool:
    kind = schema.get("type")
    if kind == wanted or (isinstance(kind, list) and wanted in kind):
        return True
    return wanted == "object" and "properties" in schema
