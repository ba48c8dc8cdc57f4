"""An OpenAPI document's operations as tool definitions: name, input schema, annotations, description.

One ``Operation`` per method of each path. Its tool name is its ``operationId`` (``get_items_id``
for ``GET /items/{id}`` when it has none); its input schema has one property per path, query and header
parameter (required as the document says) and, for a JSON request body, a ``body`` property.
Parameters are never flattened into the body's properties, so a parameter and a body field of
the same name cannot be confused. Header parameters the entry's ``headers`` set, and those
OpenAPI says to ignore (``Authorization``, ``Accept``, ``Content-Type``), are not offered to callers.

A path that does not begin with ``/`` (OpenAPI requires it) leaves its operations out: appended
to the base URL, it could change the URL's host. ``$ref``s are resolved within the document; a
remote ``$ref`` or a cycle leaves the operation out with a ``OperationError`` naming it (its
server's other operations are still mounted).
OpenAPI 3.0 schemas are brought to JSON Schema 2020-12 where they differ (``nullable``, boolean
``exclusiveMinimum``/``exclusiveMaximum``).

Annotations follow the method's HTTP semantics: GET and HEAD are read-only and idempotent,
PUT is idempotent, DELETE is destructive (and asks for approval), POST and PATCH are neither.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
IN_ARGUMENTS = ("path", "query", "header")
BODY = "body"
IGNORED_HEADERS = frozenset({"authorization", "accept", "content-type"})
_MAX_DEPTH = 64
_UNNAMED = re.compile(r"[^A-Za-z0-9]+")
"""What separates the words of ``<method> <path>``, the name of an operation without an operationId."""


class OperationError(ValueError):
    """An operation that cannot be offered as a tool (the message says which and why)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str
    """``path``, ``query`` or ``header``."""


@dataclass(frozen=True)
class Operation:
    """One operation of the document, as the call needs it and as the tool is listed."""

    name: str
    method: str
    path: str
    """The path template (``/items/{id}``): what the URL is built from and what a span names."""
    parameters: tuple[Parameter, ...]
    has_body: bool
    tool: types.Tool = field(compare=False)


def operations(
    document: Mapping[str, Any], *, config_headers: frozenset[str] = frozenset()
) -> Iterator[Operation | OperationError]:
    """Every operation of ``document``; one that cannot be offered yields an ``OperationError`` instead."""
    resolver = _Resolver(document)
    for path, item in (document.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        if not str(path).startswith("/"):
            # Appended to the base URL, "@host/x" or ".evil.example/x" would change its host.
            yield OperationError(f"path {str(path)!r} does not begin with '/'")
            continue
        for method in METHODS:
            raw = item.get(method)
            if isinstance(raw, dict):
                try:
                    yield _operation(resolver, str(path), method, item, raw, config_headers)
                except OperationError as exc:
                    yield exc


def _operation(
    resolver: _Resolver,
    path: str,
    method: str,
    item: Mapping[str, Any],
    raw: Mapping[str, Any],
    config_headers: frozenset[str],
) -> Operation:
    given = raw.get("operationId")
    name = given if isinstance(given, str) and given else _UNNAMED.sub("_", f"{method} {path}").strip("_")
    try:
        parameters, properties, required = _parameters(resolver, item, raw, config_headers)
        has_body = _body(resolver, raw, properties, required)
    except OperationError as exc:
        raise OperationError(f"operation {name!r} ({method.upper()} {path}): {exc}") from None
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    description = "\n\n".join(text for key in ("summary", "description") if isinstance(text := raw.get(key), str))
    tool = types.Tool(
        name=name,
        description=description or f"{method.upper()} {path}",
        input_schema=schema,
        annotations=hints(method),
    )
    return Operation(name, method.upper(), path, tuple(parameters), has_body, tool)


def hints(method: str) -> types.ToolAnnotations:
    """MCP hints for an HTTP method (see the module doc)."""
    method = method.lower()
    readonly = method in ("get", "head", "options")
    return types.ToolAnnotations(
        read_only_hint=readonly,
        destructive_hint=method == "delete",
        idempotent_hint=readonly or method in ("put", "delete"),
        open_world_hint=True,
    )


def _parameters(
    resolver: _Resolver, item: Mapping[str, Any], raw: Mapping[str, Any], config_headers: frozenset[str]
) -> tuple[list[Parameter], dict[str, Any], list[str]]:
    declared: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in [*(item.get("parameters") or []), *(raw.get("parameters") or [])]:  # the operation's win
        found = resolver.resolve(entry)
        if isinstance(found, dict) and isinstance(found.get("name"), str):
            declared[(found["name"], str(found.get("in")))] = found
    parameters: list[Parameter] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for (name, location), found in declared.items():
        if location not in IN_ARGUMENTS:
            if found.get("required"):
                raise OperationError(f"a required {location} parameter ({name!r}) cannot be given by a caller")
            continue
        lowered = name.lower()
        if location == "header" and (lowered in IGNORED_HEADERS or lowered in config_headers):
            continue  # set by the entry's headers or by the call itself, never by the caller
        if name in properties or name == BODY:
            raise OperationError(f"two arguments would be named {name!r}")
        schema = dict(resolver.inline(found.get("schema", {})))
        if isinstance(found.get("description"), str):
            schema.setdefault("description", found["description"])
        properties[name] = schema
        if found.get("required") or location == "path":
            required.append(name)
        parameters.append(Parameter(name, location))
    return parameters, properties, required


def _body(resolver: _Resolver, raw: Mapping[str, Any], properties: dict[str, Any], required: list[str]) -> bool:
    body = resolver.resolve(raw.get("requestBody"))
    if not isinstance(body, dict):
        return False
    content: dict[str, Any] = body["content"] if isinstance(body.get("content"), dict) else {}
    media = next((kind for kind in content if kind.split(";")[0].strip().endswith(("/json", "+json"))), None)
    if media is None:
        if body.get("required"):
            raise OperationError(f"its request body is not JSON ({', '.join(content) or 'no content'})")
        return False
    schema = content[media].get("schema", {}) if isinstance(content[media], dict) else {}
    properties[BODY] = dict(resolver.inline(schema))
    if isinstance(body.get("description"), str):
        properties[BODY].setdefault("description", body["description"])
    if body.get("required"):
        required.append(BODY)
    return True


class _Resolver:
    """Local ``$ref`` resolution (``#/components/...``), inlining, and OpenAPI 3.0 -> JSON Schema fixes."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._document = document
        self._legacy = str(document.get("openapi", "")).startswith("3.0")

    def resolve(self, node: Any) -> Any:
        """``node``, or what its ``$ref`` points at (following refs to refs)."""
        seen: list[str] = []
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise OperationError(f"$ref cycle: {' -> '.join([*seen, ref])}")
            seen.append(ref)
            node = self._target(ref)
        return node

    def inline(self, node: Any, trail: tuple[str, ...] = ()) -> Any:
        """``node`` with every ``$ref`` replaced by its target (a schema that refers to itself is refused)."""
        if len(trail) > _MAX_DEPTH:
            raise OperationError(f"schema nested deeper than {_MAX_DEPTH} references")
        if isinstance(node, list):
            return [self.inline(item, trail) for item in node]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in trail:
                raise OperationError(f"recursive schema: {' -> '.join([*trail, ref])} (not supported)")
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return {**self.inline(self._target(ref), (*trail, ref)), **self.inline(siblings, trail)}
        result = {key: self.inline(value, trail) for key, value in node.items()}
        return self._modern(result) if self._legacy else result

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise OperationError(f"$ref {ref!r} is not within the document (only '#/...' references are read)")
        node: Any = self._document
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise OperationError(f"$ref {ref!r} points at nothing")
            node = node[part]
        return node

    @staticmethod
    def _modern(schema: dict[str, Any]) -> dict[str, Any]:
        """An OpenAPI 3.0 schema object's differences from JSON Schema 2020-12, rewritten."""
        if schema.get("nullable") is True and "type" in schema:
            del schema["nullable"]
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            schema["type"] = [*kinds, "null"]
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(schema.get(bound), bool) and schema.pop(bound) and limit in schema:
                schema[bound] = schema.pop(limit)
        return schema
