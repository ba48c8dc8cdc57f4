"""One upstream tool as an apcore module: its JSON Schema as the input contract, its hints as annotations.

The module's ``execute`` hands the call to the server's source (which reaches the upstream
through the pool), so everything apcore puts around a call (ACL, approval, middleware,
timeouts, metrics, the explorer) applies to upstream tools as to local ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import mcp.types as types
from apcore import Context, ModuleAnnotations, Registry
from apcore.errors import SchemaValidationError
from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError
from pydantic import BaseModel

from apcore_mcp.types import JSONValue
from apcore_mcp.upstream.passthrough import MCP_RESULT_KEY, to_output

UPSTREAM_TAG = "upstream"

J = TypeVar("J", bound=JSONValue)


class ToolCaller(Protocol):
    """What an upstream module calls through (an ``UpstreamSource``)."""

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], context: Context, *, repeatable: bool = False
    ) -> types.CallToolResult: ...


class JsonSchemaModel:
    """An apcore input (or output) contract backed by a JSON Schema (what an upstream tool declares).

    apcore calls ``model_validate_json(text, strict=True)`` (or ``model_validate``) before each
    call and ``model_json_schema()`` to describe the module, and again on every call for its
    redaction step: the schema is kept, never rebuilt, and the validator is compiled once.
    JSON Schema has no coercion, so validation is always strict.
    """

    def __init__(self, schema: Mapping[str, Any] | None, *, what: str = "Input") -> None:
        self._what = what
        self._schema: dict[str, Any] = dict(schema or {"type": "object", "properties": {}})
        cls = validators.validator_for(self._schema)
        try:
            cls.check_schema(self._schema)
        except SchemaError as exc:
            raise ValueError(f"invalid input schema: {exc.message}") from None
        self._validator = cls(self._schema)

    def model_json_schema(self) -> dict[str, Any]:
        return self._schema

    def model_rebuild(self) -> None:
        """Nothing to rebuild (apcore calls it on registration)."""

    def model_validate(self, data: J, *, strict: bool | None = None) -> J:
        """Return ``data`` if it matches the schema.

        Raises:
            SchemaValidationError: one entry per violation (``path``, ``keyword``, ``message``).
        """
        errors = sorted(self._validator.iter_errors(data), key=lambda error: list(error.absolute_path))
        if errors:
            details = [_detail(error) for error in errors]
            raise SchemaValidationError(message=f"{self._what} validation failed: {details}", errors=details)
        return data

    def model_validate_json(self, text: str | bytes | bytearray, *, strict: bool | None = None) -> JSONValue:
        data: JSONValue = json.loads(text)
        return self.model_validate(data, strict=strict)


def _detail(error: ValidationError) -> dict[str, Any]:
    path = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path)
    return {"path": path, "keyword": str(error.validator), "message": error.message}


class ResultOutput:
    """The output contract of an upstream module: ``{MCP_RESULT_KEY: <CallToolResult wire JSON>}``.

    ``model_json_schema()`` is the upstream's ``outputSchema`` (what ``structuredContent``
    follows), which is what our clients are told; ``{}`` when it declared none. The carried
    result is checked for its shape only: the SDK client already validated it.
    """

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self._schema: dict[str, Any] = dict(schema or {})

    def model_json_schema(self) -> dict[str, Any]:
        return self._schema

    def model_rebuild(self) -> None:
        """Nothing to rebuild."""

    def model_validate(self, data: J, *, strict: bool | None = None) -> J:
        wire = data.get(MCP_RESULT_KEY) if isinstance(data, Mapping) else None
        if isinstance(wire, str) and wire.startswith("{"):
            return data
        if not isinstance(wire, Mapping) or not isinstance(wire.get("content"), list):
            error = {"path": f"/{MCP_RESULT_KEY}", "keyword": "type", "message": "not an MCP tool result"}
            raise SchemaValidationError(message="Output validation failed", errors=[error])
        return data


def to_annotations(hints: types.ToolAnnotations | None) -> ModuleAnnotations:
    """apcore annotations for MCP hints, reading absent hints with MCP's defaults.

    MCP defaults ``destructiveHint`` to true for a tool that is not read-only, and
    ``openWorldHint`` to true: an upstream tool that says nothing is treated as one that may
    destroy, so approval policies keyed on ``destructive`` cover it.
    """
    readonly = bool(hints is not None and hints.read_only_hint)
    destructive_hint = hints.destructive_hint if hints is not None else None
    open_world = hints.open_world_hint if hints is not None else None
    return ModuleAnnotations(
        readonly=readonly,
        destructive=not readonly and (destructive_hint is None or bool(destructive_hint)),
        idempotent=bool(hints is not None and hints.idempotent_hint),
        open_world=open_world is None or bool(open_world),
    )


class UpstreamTool:
    """The apcore module standing for one tool of one upstream server."""

    def __init__(self, caller: ToolCaller, server: str, tool: types.Tool, *, timeout: float) -> None:
        self._caller = caller
        self.server = server
        self.tool_name = tool.name
        self.description = tool.description or (tool.annotations.title if tool.annotations else None) or tool.name
        self.input_schema = JsonSchemaModel(tool.input_schema)
        self.output_schema = ResultOutput(tool.output_schema)
        self.annotations = to_annotations(tool.annotations)
        self.tags = [UPSTREAM_TAG, server]
        self.resources = {"timeout": int(timeout * 1000)}
        self.metadata = {"upstream": {"server": server, "tool": tool.name}}
        self.documentation = ""
        self.fingerprint = tool.model_dump_json(by_alias=True, exclude_none=True)
        """The tool as listed: a refresh re-registers the module only when this changed."""

    async def execute(self, inputs: dict[str, Any], context: Context) -> dict[str, Any]:
        repeatable = self.annotations.readonly or self.annotations.idempotent
        return to_output(await self._caller.call_tool(self.tool_name, inputs, context, repeatable=repeatable))


def upstream_server_of(registry: Registry, module_id: str) -> str | None:
    """The upstream server behind ``module_id``, or ``None`` for a local module."""
    module = registry.get(module_id)
    return module.server if isinstance(module, UpstreamTool) else None


def upstream_origin(registry: Registry, module_id: str) -> dict[str, str] | None:
    """``{"server", "tool"}``: the server behind ``module_id`` and the tool's own name there; ``None`` if local.

    The way back from a readable id (``everything.get_sum``) to what it calls (``get-sum``).
    A tool name is shown only where the tool itself is (the explorer), never on an open route.
    """
    module = registry.get(module_id)
    return {"server": module.server, "tool": module.tool_name} if isinstance(module, UpstreamTool) else None


def json_schema_model(schema: Mapping[str, Any], name: str = "JsonSchemaInput") -> type[BaseModel]:
    """A pydantic model class whose contract is ``schema`` (a JSON Schema document), for module authors.

    apcore's discovery and registry accept only ``BaseModel`` subclasses as a module's
    ``input_schema``; this one describes itself with ``schema`` as written and validates with
    it (``JsonSchemaModel``), so a schema that names its dialect (``$schema``) is served verbatim.

    Raises:
        ValueError: ``schema`` is not a valid JSON Schema.
    """
    contract = JsonSchemaModel(schema)

    # The validators return the data itself, not an instance: ``Any`` is what lets them override pydantic's.
    class Contract(BaseModel):
        @classmethod
        def model_json_schema(cls, *args: object, **kwargs: object) -> dict[str, Any]:
            return contract.model_json_schema()

        @classmethod
        def model_validate(cls, obj: JSONValue, *args: object, **kwargs: object) -> Any:
            return contract.model_validate(obj)

        @classmethod
        def model_validate_json(cls, json_data: str | bytes | bytearray, *args: object, **kwargs: object) -> Any:
            return contract.model_validate_json(json_data)

    Contract.__name__ = Contract.__qualname__ = name
    return Contract
