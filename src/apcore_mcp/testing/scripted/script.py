"""The script of a scripted MCP server: what it declares and what it answers, turn by turn.

A script is YAML written in ``snake_case``; it is validated into MCP SDK types here, once,
and the SDK sends them in the protocol's ``camelCase``. Free-form values (input schemas,
``structured_content``, ``_meta``) are kept exactly as written. Every error names the file
and the field (``DocumentError``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import mcp.types as types
import pydantic

from apcore_mcp.testing.fields import DocumentError, Field, load_yaml

DEFAULT_CASE = "default"
LIST_KINDS = ("tools", "resources", "prompts")

_CONTENT_TYPES: dict[str, type[pydantic.BaseModel]] = {
    "text": types.TextContent,
    "image": types.ImageContent,
    "audio": types.AudioContent,
    "resource": types.EmbeddedResource,
    "resource_link": types.ResourceLink,
}
_RESULT_KEYS = frozenset({"content", "structured_content", "is_error", "meta", "_meta"})
_TURN_KEYS = _RESULT_KEYS | {"error", "delay_ms", "progress", "input", "on_decline", "on_cancel", "list_changed"}
_TOOL_KEYS = frozenset({"responses", "cases"})
_ROOT_KEYS = frozenset({"server", "tools", "resources", "prompts", "directive_tool"})
_SERVER_KEYS = frozenset({"name", "version", "instructions"})
_DIRECTIVE_KEYS = frozenset({"name", "argument", "description"})
_PROGRESS_KEYS = frozenset({"progress", "total", "message"})
_ERROR_KEYS = frozenset({"code", "message", "data"})
_ASK_KINDS = frozenset({"elicit", "sample", "list_roots"})

InputRound = dict[str, types.InputRequest]
T = TypeVar("T")


@dataclass(frozen=True)
class Progress:
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class Turn:
    """One scripted answer to one tool call, played in this order: wait ``delay``, send
    ``progress``, announce ``list_changed``, ask each input round, then answer.

    The answer is ``error`` (a JSON-RPC error) if set; else ``on_decline``/``on_cancel`` when an
    elicitation got that action; else ``result``; with input rounds and no scripted content,
    the answers themselves (``structured_content: {"answers": ...}``).
    """

    result: types.CallToolResult | None = None
    error: types.ErrorData | None = None
    delay: float = 0.0
    progress: tuple[Progress, ...] = ()
    list_changed: tuple[str, ...] = ()
    rounds: tuple[InputRound, ...] = ()
    on_decline: types.CallToolResult | None = None
    on_cancel: types.CallToolResult | None = None


@dataclass(frozen=True)
class ScriptedTool:
    tool: types.Tool
    cases: dict[str, tuple[Turn, ...]]


@dataclass(frozen=True)
class ScriptedResource:
    resource: types.Resource
    contents: types.TextResourceContents | types.BlobResourceContents


@dataclass(frozen=True)
class ScriptedPrompt:
    prompt: types.Prompt
    messages: tuple[types.PromptMessage, ...]


@dataclass(frozen=True)
class DirectiveTool:
    """The one generic tool of the in-band mode (``[test_case_id=...]`` directives)."""

    name: str = "get_data"
    argument: str = "task_description"
    description: str = "Answers with the responses its input's directives carry"

    def to_tool(self) -> types.Tool:
        schema = {"type": "object", "properties": {self.argument: {"type": "string"}}, "required": [self.argument]}
        return types.Tool(name=self.name, description=self.description, input_schema=schema)


@dataclass(frozen=True)
class Script:
    source: str
    name: str = "scripted-mcp"
    version: str = "1.0.0"
    instructions: str | None = None
    tools: dict[str, ScriptedTool] = field(default_factory=dict)
    resources: dict[str, ScriptedResource] = field(default_factory=dict)
    prompts: dict[str, ScriptedPrompt] = field(default_factory=dict)
    directive: DirectiveTool | None = None


def load_script(path: Path) -> Script:
    """Read and validate a script file.

    Raises:
        DocumentError: the file is unreadable or a field is wrong (the message names both).
    """
    return parse_script(load_yaml(path))


def parse_script(root: Field) -> Script:
    root.mapping(_ROOT_KEYS)
    server = root.child("server")
    if server.present:
        server.mapping(_SERVER_KEYS)
    directive = root.child("directive_tool")
    return Script(
        source=root.source,
        name=server.child("name").string("scripted-mcp"),
        version=server.child("version").string("1.0.0"),
        instructions=server.child("instructions").optional_string(),
        tools=_unique(root.child("tools"), _parse_tool, lambda t: t.tool.name),
        resources=_unique(root.child("resources"), _parse_resource, lambda r: r.resource.uri),
        prompts=_unique(root.child("prompts"), _parse_prompt, lambda p: p.prompt.name),
        directive=_parse_directive(directive) if directive.present else None,
    )


def _unique(node: Field, parse: Callable[[Field], T], key: Callable[[T], str]) -> dict[str, T]:
    found: dict[str, T] = {}
    if not node.present:
        return found
    for item in node.elements():
        parsed = parse(item)
        name = key(parsed)
        if name in found:
            raise item.fail(f"{name!r} is declared twice")
        found[name] = parsed
    return found


def _without(node: Field, keys: frozenset[str]) -> Field:
    node.mapping()
    return Field({k: v for k, v in node.value.items() if k not in keys}, node.source, node.path)


def _parse_tool(node: Field) -> ScriptedTool:
    node.mapping(None, required=("name",))
    declared = _without(node, _TOOL_KEYS).value
    declared.setdefault("input_schema", {"type": "object"})
    tool = Field(declared, node.source, node.path).model(types.Tool)
    cases: dict[str, tuple[Turn, ...]] = {}
    responses = node.child("responses")
    if responses.present:
        cases[DEFAULT_CASE] = parse_turns(responses)
    for case_id, turns in node.child("cases").items() if node.child("cases").present else ():
        cases[case_id] = parse_turns(turns)
    return ScriptedTool(tool, cases)


def parse_turns(node: Field) -> tuple[Turn, ...]:
    """A list of turns (also what an ``[mcp_responses_json=...]`` directive carries)."""
    return tuple(parse_turn(item) for item in node.elements())


def parse_turn(node: Field) -> Turn:
    node.mapping(_TURN_KEYS)
    error = node.child("error")
    rounds = tuple(_parse_round(r) for r in node.child("input").elements()) if node.child("input").present else ()
    has_result = any(node.child(key).present for key in _RESULT_KEYS)
    if error.present and (has_result or rounds):
        raise node.fail("'error' answers the call by itself: remove the result fields or the error")
    return Turn(
        result=parse_result(node) if has_result or not (error.present or rounds) else None,
        error=error.mapping(_ERROR_KEYS, required=("code", "message")).model(types.ErrorData)
        if error.present
        else None,
        delay=node.child("delay_ms").number(0, minimum=0) / 1000,
        progress=tuple(_parse_progress(p) for p in node.child("progress").elements())
        if node.child("progress").present
        else (),
        list_changed=tuple(_list_kind(node.child("list_changed"))),
        rounds=rounds,
        on_decline=parse_result(node.child("on_decline")) if node.child("on_decline").present else None,
        on_cancel=parse_result(node.child("on_cancel")) if node.child("on_cancel").present else None,
    )


def parse_result(node: Field) -> types.CallToolResult:
    """``content`` / ``structured_content`` / ``is_error`` / ``meta`` as a ``CallToolResult``."""
    values = {k: v for k, v in node.mapping().value.items() if k in _RESULT_KEYS}
    content = node.child("content")
    values["content"] = [parse_content(c) for c in content.elements()] if content.present else []
    if "meta" in values:
        values["_meta"] = values.pop("meta")
    return Field(values, node.source, node.path).model(types.CallToolResult)


def parse_content(node: Field) -> types.ContentBlock:
    kind = node.mapping(None, required=("type",)).child("type").string()
    model = _CONTENT_TYPES.get(kind)
    if model is None:
        raise node.child("type").fail(f"unknown content type {kind!r} (expected one of: {', '.join(_CONTENT_TYPES)})")
    block: types.ContentBlock = node.model(model)  # type: ignore[assignment]  # one of the five members
    return block


def _parse_progress(node: Field) -> Progress:
    node.mapping(_PROGRESS_KEYS, required=("progress",))
    total = node.child("total")
    return Progress(
        progress=node.child("progress").number(),
        total=total.number() if total.present else None,
        message=node.child("message").optional_string(),
    )


def _list_kind(node: Field) -> list[str]:
    if not node.present:
        return []
    kinds = node.string_list()
    for kind in kinds:
        if kind not in LIST_KINDS:
            raise node.fail(f"unknown list {kind!r} (expected one of: {', '.join(LIST_KINDS)})")
    return kinds


def _parse_round(node: Field) -> InputRound:
    """``{key: {elicit: {...}} | {sample: {...}} | {list_roots: {}}}``: what one round asks."""
    requests: InputRound = {}
    for key, ask in node.mapping().items():
        ask.mapping(_ASK_KINDS)
        if len(ask.value) != 1:
            raise ask.fail("give exactly one of: elicit, sample, list_roots")
        kind, body = next(iter(ask.items()))
        if kind == "elicit":
            requests[key] = types.ElicitRequest(params=body.model(types.ElicitRequestFormParams))
        elif kind == "sample":
            requests[key] = types.CreateMessageRequest(params=body.model(types.CreateMessageRequestParams))
        else:
            requests[key] = types.ListRootsRequest()
    if not requests:
        raise node.fail("an input round needs at least one request")
    return requests


def _parse_resource(node: Field) -> ScriptedResource:
    node.mapping(None, required=("uri", "name"))
    text, blob = node.child("text"), node.child("blob")
    if text.present == blob.present:
        raise node.fail("give exactly one of 'text' or 'blob' (base64)")
    resource = _without(node, frozenset({"text", "blob"})).model(types.Resource)
    contents: types.TextResourceContents | types.BlobResourceContents
    if text.present:
        contents = types.TextResourceContents(uri=resource.uri, mime_type=resource.mime_type, text=text.string())
    else:
        contents = types.BlobResourceContents(uri=resource.uri, mime_type=resource.mime_type, blob=blob.string())
    return ScriptedResource(resource, contents)


def _parse_prompt(node: Field) -> ScriptedPrompt:
    node.mapping(None, required=("name", "messages"))
    prompt = _without(node, frozenset({"messages"})).model(types.Prompt)
    messages = tuple(_parse_message(m) for m in node.child("messages").elements())
    return ScriptedPrompt(prompt, messages)


def _parse_message(node: Field) -> types.PromptMessage:
    node.mapping(frozenset({"role", "content"}), required=("role", "content"))
    return types.PromptMessage.model_validate(
        {"role": node.child("role").string(), "content": parse_content(node.child("content"))}
    )


def _parse_directive(node: Field) -> DirectiveTool:
    node.mapping(_DIRECTIVE_KEYS)
    default = DirectiveTool()
    return DirectiveTool(
        name=node.child("name").string(default.name),
        argument=node.child("argument").string(default.argument),
        description=node.child("description").string(default.description),
    )


__all__ = ["DEFAULT_CASE", "DirectiveTool", "DocumentError", "Script", "Turn", "load_script", "parse_turns"]
