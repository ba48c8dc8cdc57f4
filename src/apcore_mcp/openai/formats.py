"""OpenAI wire formats of one function list: Chat Completions and Responses (namespaces).

The third format, the Agents API's, is in ``openai/agents.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from apcore_mcp.openai.naming import MAX_NAME_LENGTH, SHORTENED_MARK, normalize_tool_name

Format = Literal["chat", "responses", "agents"]
FORMATS: tuple[Format, ...] = ("chat", "responses", "agents")
NAMESPACE_SIZE = 9
"""OpenAI advises fewer than 10 functions per namespace (tool search guide)."""
MAX_DESCRIPTION = 1_024
"""Our cap on a generated namespace description (OpenAI documents none)."""

NamespaceDescriber = Callable[[str, Mapping[str, str]], str]
"""``(module id prefix, {module id: description})`` -> the namespace's description."""


@dataclass(frozen=True, slots=True)
class OpenAIFunction:
    """One module as an OpenAI function, before a wire format is chosen."""

    module_id: str
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool | None
    """``None``: strict mode was not asked for; ``False``: asked for, but see ``non_strict_reason``."""
    non_strict_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ResponsesOptions:
    """How the Responses format groups and defers functions.

    ``namespace_depth`` leading id segments name a namespace (``0``: no namespaces); a namespace
    holds at most ``namespace_size`` functions, a larger group is cut into parts ``name--1``,
    ``name--2``...; ``namespace_description`` replaces the generated description;
    ``defer_loading`` defers every function to tool search (and adds the ``tool_search`` tool).
    """

    namespace_depth: int = 1
    namespace_size: int = NAMESPACE_SIZE
    namespace_description: NamespaceDescriber | None = None
    defer_loading: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.namespace_depth, bool) or not isinstance(self.namespace_depth, int):
            raise TypeError("namespace_depth must be an integer")
        if isinstance(self.namespace_size, bool) or not isinstance(self.namespace_size, int):
            raise TypeError("namespace_size must be an integer")
        if self.namespace_depth < 0:
            raise ValueError("namespace_depth must be 0 or more")
        if self.namespace_size < 1:
            raise ValueError("namespace_size must be 1 or more")


def check_format(format: str, responses: ResponsesOptions) -> None:
    """Raise ``ValueError`` for an unknown format, or Responses options given with another format."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if format != "responses" and responses != ResponsesOptions():
        raise ValueError("namespaces and defer_loading exist only in format 'responses'")


def render(functions: Sequence[OpenAIFunction], format: Format, responses: ResponsesOptions) -> list[dict[str, Any]]:
    """The ``tools`` list of a request in ``format`` (``agents``: see ``openai/agents.py``)."""
    if format == "chat":
        return [to_chat_tool(function) for function in functions]
    if format == "responses":
        return to_responses_tools(functions, responses)
    raise ValueError(f"render() makes chat and responses lists, not {format!r}")


def to_chat_tool(function: OpenAIFunction) -> dict[str, Any]:
    """Chat Completions: ``{"type": "function", "function": {name, description, parameters[, strict]}}``."""
    body: dict[str, Any] = {
        "name": function.name,
        "description": function.description,
        "parameters": function.parameters,
    }
    if function.strict is not None:
        body["strict"] = function.strict
    return {"type": "function", "function": body}


def to_responses_function(function: OpenAIFunction, *, defer_loading: bool = False) -> dict[str, Any]:
    """Responses: ``{"type": "function", name, description, parameters, strict[, defer_loading]}``.

    ``strict`` is always present: the Responses API tries strict mode when it is left out.
    """
    tool: dict[str, Any] = {
        "type": "function",
        "name": function.name,
        "description": function.description,
        "parameters": function.parameters,
        "strict": bool(function.strict),
    }
    if defer_loading:
        tool["defer_loading"] = True
    return tool


def to_responses_tools(functions: Sequence[OpenAIFunction], options: ResponsesOptions) -> list[dict[str, Any]]:
    """Functions grouped into namespaces by module id prefix, in the order of their first module.

    A module whose id has no prefix at the depth (one segment) stays a top-level function.
    """
    groups: dict[str, list[OpenAIFunction]] = {}
    entries: list[OpenAIFunction | str] = []
    for function in functions:
        prefix = namespace_prefix(function.module_id, options.namespace_depth)
        if prefix is None:
            entries.append(function)
        elif prefix not in groups:
            groups[prefix] = [function]
            entries.append(prefix)
        else:
            groups[prefix].append(function)
    tools: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, OpenAIFunction):
            tools.append(to_responses_function(entry, defer_loading=options.defer_loading))
        else:
            tools.extend(_namespaces(entry, groups[entry], options))
    if options.defer_loading and functions:
        tools.append({"type": "tool_search"})
    return tools


def namespace_prefix(module_id: str, depth: int) -> str | None:
    """The first ``depth`` segments of ``module_id``, never the whole id (``None``: no namespace)."""
    segments = module_id.split(".")
    if depth <= 0 or len(segments) < 2:
        return None
    return ".".join(segments[: min(depth, len(segments) - 1)])


def describe_namespace(prefix: str, descriptions: Mapping[str, str]) -> str:
    """``Tools for image: crop (Crop an image); resize (Resize an image)``, at most 1,024 characters."""
    items = []
    for module_id, description in descriptions.items():
        short = module_id.removeprefix(prefix + ".")
        first_line = description.strip().splitlines()[0] if description.strip() else ""
        items.append(f"{short} ({first_line})" if first_line else short)
    text = f"Tools for {prefix}: " + "; ".join(items)
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


def _namespaces(prefix: str, members: list[OpenAIFunction], options: ResponsesOptions) -> list[dict[str, Any]]:
    size = options.namespace_size
    parts = [members[start : start + size] for start in range(0, len(members), size)]
    describe = options.namespace_description or describe_namespace
    return [
        {
            "type": "namespace",
            "name": _namespace_name(prefix, index if len(parts) > 1 else None),
            "description": describe(prefix, {function.module_id: function.description for function in part}),
            "tools": [to_responses_function(function, defer_loading=options.defer_loading) for function in part],
        }
        for index, part in enumerate(parts, 1)
    ]


def _namespace_name(prefix: str, part: int | None) -> str:
    name = normalize_tool_name(prefix)
    if part is None:
        return name
    suffix = f"{SHORTENED_MARK}{part}"
    return name[: MAX_NAME_LENGTH - len(suffix)] + suffix
