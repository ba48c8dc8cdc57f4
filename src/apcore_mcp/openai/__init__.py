"""OpenAI tool definitions (plain dicts; the ``openai`` package is never imported)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from apcore import Executor, Registry

from apcore_mcp.openai.agents import DEFAULT_SERVER_LABEL, AgentsOptions, check_agents, to_agents_tools
from apcore_mcp.openai.agents import MAX_AGENTS_TOOLS_BYTES as MAX_AGENTS_TOOLS_BYTES
from apcore_mcp.openai.formats import (
    NAMESPACE_SIZE,
    Format,
    NamespaceDescriber,
    OpenAIFunction,
    ResponsesOptions,
    check_format,
    render,
    to_chat_tool,
)
from apcore_mcp.openai.naming import (
    MAX_NAME_LENGTH as MAX_NAME_LENGTH,
)
from apcore_mcp.openai.naming import (
    SHORTENED_MARK as SHORTENED_MARK,
)
from apcore_mcp.openai.naming import (
    denormalize_tool_name as denormalize_tool_name,
)
from apcore_mcp.openai.naming import (
    normalize_tool_name as normalize_tool_name,
)
from apcore_mcp.openai.naming import (
    openai_names as openai_names,
)
from apcore_mcp.openai.strict import BRANCH_KEYS, strict_problem
from apcore_mcp.openai.strict import to_strict_schema as to_strict_schema
from apcore_mcp.tools.behaviour import to_description_suffix
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.schema import to_input_schema
from apcore_mcp.types import JSONValue, RegistryOrExecutor, registry_of

logger = logging.getLogger(__name__)


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


def to_openai_function(record: ToolRecord, *, embed_annotations: bool = False, strict: bool = False) -> OpenAIFunction:
    """One module as an OpenAI function; a schema that cannot be strict is kept as it is, with the reason.

    Raises:
        ValueError: the module id has no OpenAI name (it holds a ``-``).
    """
    description = record.description
    if embed_annotations:
        description += to_description_suffix(record.annotations)
    name = normalize_tool_name(record.name)
    if not strict:
        return OpenAIFunction(record.name, name, description, record.input_schema, None)
    parameters = to_strict_schema(record.input_schema, record.name)
    problem = strict_problem(parameters)
    if problem is None:
        return OpenAIFunction(record.name, name, description, parameters, True)
    logger.warning("Module %s is listed non-strict for OpenAI: %s", record.name, problem)
    return OpenAIFunction(record.name, name, description, record.input_schema, False, problem)


def to_openai_tool(record: ToolRecord, *, embed_annotations: bool = False, strict: bool = False) -> dict[str, Any]:
    """One Chat Completions ``{"type": "function", "function": {...}}`` definition."""
    return to_chat_tool(to_openai_function(record, embed_annotations=embed_annotations, strict=strict))


def to_openai_tools(
    registry_or_executor: RegistryOrExecutor,
    *,
    embed_annotations: bool = False,
    strict: bool = False,
    tags: Sequence[str] | None = None,
    prefix: str | None = None,
    format: Format = "chat",
    namespace_depth: int = 1,
    namespace_size: int = NAMESPACE_SIZE,
    namespace_description: NamespaceDescriber | None = None,
    defer_loading: bool = False,
    agents_form: str = "functions",
    server_url: str | None = None,
    server_label: str = DEFAULT_SERVER_LABEL,
) -> list[dict[str, Any]]:
    """OpenAI tool definitions for every module of a Registry (or an Executor's registry).

    ``format="chat"`` (the default) gives the flat Chat Completions list; ``"responses"`` the
    Responses API's tools, grouped into namespaces of at most ``namespace_size`` functions by
    the first ``namespace_depth`` segments of module ids (``0``: no namespaces), each described
    by ``namespace_description(prefix, {module id: description})`` or a generated summary;
    ``defer_loading`` defers every function to tool search (``responses`` only).

    ``format="agents"`` gives the Agents API's tools (``POST /agents``): with
    ``agents_form="functions"`` every function deferred (``defer_loading``) plus one
    ``tool_search`` tool; with ``agents_form="mcp"`` one ``mcp`` tool reaching the MCP server at
    ``server_url`` (labelled ``server_label``) whose ``allowed_tools`` are the modules listed.
    A list over the Agents API's 3 MiB of JSON raises ``ValueError`` naming its size.

    ``strict`` applies OpenAI strict mode; a module whose strict schema would exceed OpenAI's
    limits is listed with ``strict: false`` and its own schema (the reason is logged).
    ``embed_annotations`` appends the non-default behaviour annotations to each description;
    ``tags`` (all must match) and ``prefix`` filter modules. A module left out of every list
    (MCP too) is left out here with a warning: a schema that cannot be inlined (a circular or
    missing ``$ref``), or an id with no OpenAI name (one holding ``-``, or a name taken).

    Raises:
        TypeError: ``registry_or_executor`` is neither a Registry nor an Executor.
        ValueError: an empty tag or prefix, an unknown format or form, namespace or
            ``defer_loading`` options outside ``format="responses"``, Agents options outside
            ``format="agents"``, ``strict`` or ``embed_annotations`` with the ``mcp`` form, an
            Agents list over 3 MiB.
    """
    registry = registry_of(registry_or_executor)
    check_filters(tags, prefix)
    responses = ResponsesOptions(namespace_depth, namespace_size, namespace_description, defer_loading)
    check_format(format, responses)
    agents = AgentsOptions(agents_form, server_url, server_label)
    check_agents(format, agents, strict=strict, embed_annotations=embed_annotations)
    catalog = ToolCatalog(registry, tags=tags, prefix=prefix)
    catalog.load()
    tools, _ = render_records(
        catalog.records(), format, responses, agents, strict=strict, embed_annotations=embed_annotations
    )
    return tools


def render_records(
    records: Sequence[ToolRecord],
    format: Format,
    responses: ResponsesOptions,
    agents: AgentsOptions,
    *,
    strict: bool = False,
    embed_annotations: bool = False,
) -> tuple[list[dict[str, Any]], list[OpenAIFunction]]:
    """The ``tools`` of ``records`` in ``format``, and the functions made (none for the Agents ``mcp`` form).

    Raises:
        ValueError: an Agents list over 3 MiB (the message names its size).
    """
    if format == "agents" and agents.form == "mcp":
        return to_agents_tools((), [record.name for record in records], agents), []
    functions = functions_from_records(records, embed_annotations=embed_annotations, strict=strict)
    if format == "agents":
        return to_agents_tools(functions, (), agents), functions
    return render(functions, format, responses), functions


def tools_from_records(
    records: Iterable[ToolRecord], *, embed_annotations: bool = False, strict: bool = False
) -> list[dict[str, Any]]:
    """Chat Completions tools for ``records`` (see ``functions_from_records``)."""
    functions = functions_from_records(records, embed_annotations=embed_annotations, strict=strict)
    return [to_chat_tool(function) for function in functions]


def functions_from_records(
    records: Iterable[ToolRecord], *, embed_annotations: bool = False, strict: bool = False
) -> list[OpenAIFunction]:
    """Functions for ``records``, skipping (with a warning) any whose id cannot be an OpenAI name."""
    functions = []
    seen: dict[str, str] = {}
    for record in records:
        try:
            function = to_openai_function(record, embed_annotations=embed_annotations, strict=strict)
        except ValueError as exc:
            logger.warning("Skipping module %s for OpenAI: %s", record.name, exc)
            continue
        if seen.setdefault(function.name, record.name) != record.name:
            logger.warning(
                "Skipping module %s for OpenAI: its name %s is taken by %s",
                record.name,
                function.name,
                seen[function.name],
            )
            continue
        functions.append(function)
    return functions


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
    branches = [branch for key in BRANCH_KEYS if key != "allOf" for branch in schema.get(key) or ()]
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
