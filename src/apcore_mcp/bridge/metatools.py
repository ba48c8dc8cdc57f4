"""Tool-search mode: three annotated meta-tools standing in for a catalog too large to list.

``search_tools`` ranks the catalog (``apcore_mcp.tools.search``) and answers compact summaries,
``describe_tool`` gives full schemas for a few names, ``invoke_tool`` runs one tool through
the main ``CallRouter`` with the caller's own ``CallContext``: the target is authorized
(tool scopes, rate limit, concurrency share) and run by the main ``Executor`` (ACL,
approval, validation, middleware, timeout) exactly as a direct call of it would be.
``invoke_tool`` is itself not admitted: the one run it makes is counted, on its target.

A tool the caller may not call (its token lacks the tool's scopes, or its ACL denies it:
``Authorization.visible``, the rule filtered lists follow) is never found, and is
``not found`` to ``describe_tool`` and ``invoke_tool`` in exactly the words a missing tool gets.
``invoke_tool`` is annotated destructive and open-world: it may run anything, and the
annotations clients read to decide on confirmation must not promise otherwise.

The meta-tools live in a registry of their own (``meta_registry``): the served list is
those three, constant whatever the catalog does (tools/list must not vary with searches).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from apcore import Context, Executor, ModuleAnnotations, Registry
from apcore.cancel import CancelToken
from apcore.errors import ModuleNotFoundError
from pydantic import BaseModel, Field

from apcore_mcp.calls.authorization import Authorization
from apcore_mcp.calls.context import CallContext, call_context
from apcore_mcp.calls.router import CallOutcome, CallRefused, CallRouter, wire_result
from apcore_mcp.tools.content import MCP_RESULT_KEY
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.search import ToolSearch
from apcore_mcp.upstream.module import JsonSchemaModel, ResultOutput

SEARCH_TOOLS = "search_tools"
DESCRIBE_TOOL = "describe_tool"
INVOKE_TOOL = "invoke_tool"
MAX_LIMIT = 50
MAX_DESCRIBE = 20
SUMMARY_LENGTH = 200

_LOOKUP = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)
_INVOKE = ModuleAnnotations(destructive=True, open_world=True)


def caller_of(context: object) -> CallContext:
    """The ``CallContext`` of a meta-tool's caller; outside MCP, one with the apcore ``Context``'s identity."""
    call = call_context(context)
    if call is not None:
        return call
    token = getattr(context, "cancel_token", None)
    token = token if isinstance(token, CancelToken) else CancelToken()
    return CallContext(identity=getattr(context, "identity", None), cancel_token=token, origin="direct")


def hints(record: ToolRecord) -> list[str]:
    """The target's MCP hints that are true (``destructiveHint`` among them when it may destroy)."""
    return [name for name, value in record.hints.items() if value]


class SearchToolsInput(BaseModel):
    query: str = Field(min_length=1, max_length=512, description="What the tool should do, in a few words")
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="The most results to return")


class ToolSummary(BaseModel):
    name: str
    description: str
    hints: list[str] = Field(description="The tool's MCP annotation hints that are true, e.g. destructiveHint")


class SearchToolsOutput(BaseModel):
    tools: list[ToolSummary]


class DescribeToolInput(BaseModel):
    names: list[str] = Field(min_length=1, max_length=MAX_DESCRIBE, description="Tool names from search_tools")


class ToolDescription(BaseModel):
    name: str
    description: str
    inputSchema: dict[str, Any]  # the MCP spelling, which clients expect
    outputSchema: dict[str, Any] | None = None
    annotations: dict[str, bool]


class DescribeToolOutput(BaseModel):
    tools: list[ToolDescription]
    not_found: list[str]


class InvokeToolInput(BaseModel):
    name: str = Field(min_length=1, description="The tool to run (a name from search_tools)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments, as describe_tool shows")


def _contract(model: type[BaseModel], what: str = "Input") -> JsonSchemaModel:
    # JSON Schema contracts built once: apcore asks a pydantic model for its schema on every call.
    return JsonSchemaModel(model.model_json_schema(), what=what)


class _MetaTool:
    """What the three meta-tools share: the index, and which tools a caller may see."""

    def __init__(self, search: ToolSearch, authorization: Authorization) -> None:
        self._search = search
        self._authorization = authorization

    def _visible(self, caller: CallContext) -> Callable[[str], bool]:
        return self._authorization.visible_to(caller)

    def _find(self, name: str, visible: Callable[[str], bool]) -> ToolRecord | None:
        """The tool ``name`` if this caller may see it; hidden and absent alike are ``None``."""
        record = self._search.catalog.get(name)
        return record if record is not None and visible(name) else None


class SearchTools(_MetaTool):
    description = "Find tools by what they do: ranked names and one-line descriptions (then describe_tool)"
    input_schema = _contract(SearchToolsInput)
    output_schema = _contract(SearchToolsOutput, "Output")
    annotations = _LOOKUP

    async def execute(self, inputs: dict[str, Any], context: Context) -> dict[str, Any]:
        limit = int(inputs.get("limit", 10))
        records = self._search.search(str(inputs["query"]), limit, self._visible(caller_of(context)))
        return {"tools": [summary(record) for record in records]}


class DescribeTool(_MetaTool):
    description = f"Full input and output schemas of up to {MAX_DESCRIBE} tools, by name"
    input_schema = _contract(DescribeToolInput)
    output_schema = _contract(DescribeToolOutput, "Output")
    annotations = _LOOKUP

    async def execute(self, inputs: dict[str, Any], context: Context) -> dict[str, Any]:
        visible = self._visible(caller_of(context))
        tools: list[dict[str, Any]] = []
        missing: list[str] = []
        for name in dict.fromkeys(inputs["names"]):
            record = self._find(name, visible)
            if record is None:
                missing.append(name)  # hidden and absent alike: nothing tells them apart
            else:
                tools.append(description(record))
        return {"tools": tools, "not_found": missing}


class InvokeTool(_MetaTool):
    description = "Run a tool found with search_tools, with arguments matching its describe_tool schema"
    input_schema = _contract(InvokeToolInput)
    output_schema = ResultOutput(None)
    annotations = _INVOKE

    def __init__(self, search: ToolSearch, authorization: Authorization, router: CallRouter) -> None:
        super().__init__(search, authorization)
        self._router = router

    async def execute(self, inputs: dict[str, Any], context: Context) -> dict[str, Any]:
        name = str(inputs["name"])
        caller = caller_of(context)
        if self._find(name, self._visible(caller)) is None:
            held = self._router.held_answer(name, caller)  # a held tool's drift, by the router's own rule
            if held is None:
                raise ModuleNotFoundError(name)
            return {MCP_RESULT_KEY: json.dumps(wire_result(CallOutcome(tool=name, error=held)), ensure_ascii=False)}
        # The router a direct call takes: the target is authorized and admitted for this caller there.
        outcome = await self._router.call(name, dict(inputs.get("arguments") or {}), caller)
        if outcome.input_required is not None:
            raise outcome.input_required
        if outcome.missing_capability is not None:
            raise outcome.missing_capability
        if outcome.refusal is not None:
            raise CallRefused(outcome.refusal)
        # The result the target would have given called directly (an upstream's passes through).
        return {MCP_RESULT_KEY: json.dumps(wire_result(outcome), ensure_ascii=False)}


def summary(record: ToolRecord) -> dict[str, Any]:
    line = record.description.strip().splitlines()[0] if record.description.strip() else ""
    if len(line) > SUMMARY_LENGTH:
        line = line[: SUMMARY_LENGTH - 1] + "…"
    return {"name": record.name, "description": line, "hints": hints(record)}


def description(record: ToolRecord) -> dict[str, Any]:
    """The tool as ``tools/list`` would list it (its MCP rendering), without ``_meta``."""
    return record.mcp_tool.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"meta"})


def meta_registry(search: ToolSearch, router: CallRouter) -> tuple[Registry, Executor]:
    """A registry holding the three meta-tools over ``search``, and an executor for it.

    ``router`` is the main one, over ``search``'s catalog: ``invoke_tool`` runs targets
    through it, and the meta-tools show what its ``Authorization`` lets a caller call.
    """
    authorization = router.authorization
    registry = Registry()
    registry.register(SEARCH_TOOLS, SearchTools(search, authorization))
    registry.register(DESCRIBE_TOOL, DescribeTool(search, authorization))
    registry.register(INVOKE_TOOL, InvokeTool(search, authorization, router))
    return registry, Executor(registry)
