"""A filtered ``tools/list``: each caller is listed only the tools it may call.

With ``auth_filter_tools`` a tool is listed when ``Authorization.visible`` says so: the
caller's token holds its scopes and the apcore ACL lets the caller's identity reach it
(judged without arguments, so a rule that depends on arguments decides at call time). The
same rule hides tools from the explorer's list, ``search_tools`` and ``describe_tool``; calls
are checked by the call router (``calls/authorization.py``), whatever the list showed, and a tool
hidden here is answered there as an absent one. A filtered
list varies by caller, so on 2026-07-28 it is marked ``cacheScope: "private"``. A tool's MCP Apps
view (``ui://<module id>/view``, ``tools/views.py``) follows its tool: a caller the tool is hidden from
is not listed the view, and reading it answers "Resource not found".

The anonymous caller (``calls/signin.py``) is always listed this way, with or without
``auth_filter_tools``: it sees the public tools only. With auth on, every listed tool says what
it needs as ``securitySchemes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apcore import Identity
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from apcore_mcp.calls.authorization import Authorization
from apcore_mcp.calls.principal import principal_of, request_identity
from apcore_mcp.calls.signin import SignIn, is_anonymous
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.mcp.resources import not_found
from apcore_mcp.tools.resources import DOCS_SCHEME, DOCS_TEMPLATE
from apcore_mcp.tools.views import viewed_module


class ToolAccess:
    """Server middleware filtering ``tools/list`` (with ``filter_list``), and who calls without HTTP."""

    def __init__(self, authorization: Authorization | None = None, *, default_identity: Identity | None = None) -> None:
        self.authorization = authorization if authorization is not None else Authorization()
        self.default_identity = default_identity
        # The list cache (mcp/tools.py) answers the same list object until the catalog changes:
        # described once per such list, not per request.
        self._described_for: tuple[object, list[dict[str, Any]]] | None = None

    @property
    def filter_list(self) -> bool:
        """``Authorization.filter_tools``: one setting hides a tool from lists and calls alike."""
        return self.authorization.filter_tools

    @property
    def active(self) -> bool:
        """Whether it has anything to do: filtered lists, or auth on (schemes, the anonymous caller)."""
        return self.filter_list or self.authorization.signin is not None

    def listed(self, scope: Mapping[str, Any] | None, identity: Identity | None) -> Callable[[str], bool]:
        """Which tools a list shows the caller of an ASGI ``scope``: all unless lists are filtered.

        Filtered, the tools it may call (``Authorization.listed``; no token: scopes not checked).
        """
        principal = principal_of(scope)
        return self.authorization.listed(principal.scopes if principal is not None else None, identity)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in _FILTERED:
            return await call_next(ctx)
        identity = request_identity(ctx.request, self.default_identity)
        if not self.filter_list and not is_anonymous(identity):
            return await self._described(ctx, call_next)
        shown = self.listed(getattr(ctx.request, "scope", None), identity)
        if ctx.method == "resources/read":
            # A tool's view and documentation are seen by whoever sees the tool: else absent ones' answer.
            uri = str((ctx.params or {}).get("uri", ""))
            owner = tool_of(uri)
            if owner is not None and not shown(owner):
                raise not_found(uri)
            return await call_next(ctx)
        result = await self._described(ctx, call_next)
        if not isinstance(result, dict):
            return result
        if ctx.method == "completion/complete":
            return _completed(result, ctx.params or {}, shown)
        if ctx.method == "resources/list":
            filtered = {**result, "resources": [item for item in result.get("resources", []) if _seen(item, shown)]}
        else:
            filtered = {**result, "tools": [tool for tool in result.get("tools", []) if shown(str(tool.get("name")))]}
        if is_modern(ctx):
            filtered["cacheScope"] = "private"
        return filtered

    async def _described(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """The answer, each listed tool saying what it needs as ``securitySchemes`` when auth is on."""
        result = await call_next(ctx)
        signin = self.authorization.signin
        if signin is None or ctx.method != "tools/list" or not isinstance(result, dict):
            return result
        tools = result.get("tools", [])
        if self._described_for is None or self._described_for[0] is not tools:
            # New dicts: the listed ones are the list cache's.
            self._described_for = (tools, [described(tool, signin) for tool in tools])
        listed = {**result, "tools": self._described_for[1]}
        if signin.mixed and is_modern(ctx):
            listed["cacheScope"] = "private"  # the anonymous caller is listed fewer
        return listed


def described(tool: Mapping[str, Any], signin: SignIn) -> dict[str, Any]:
    """A wire tool with its ``securitySchemes``: top level (SEP-1488) and in ``_meta``, which every client keeps."""
    schemes = signin.schemes(str(tool.get("name")))
    meta = {**(tool.get("_meta") or {}), "securitySchemes": schemes}
    return {**tool, "securitySchemes": schemes, "_meta": meta}


_FILTERED = ("tools/list", "resources/list", "resources/read", "completion/complete")


def tool_of(uri: str) -> str | None:
    """The tool a resource URI belongs to: its MCP Apps view or its ``docs://`` page (``None``: no tool's)."""
    if uri.startswith(DOCS_SCHEME):
        return uri[len(DOCS_SCHEME) :]
    return viewed_module(uri)


def _completed(result: dict[str, Any], params: Mapping[str, Any], shown: Callable[[str], bool]) -> dict[str, Any]:
    """``docs://{module_id}``'s completions without the tools hidden from the caller."""
    ref = params.get("ref") or {}
    completion = result.get("completion")
    if ref.get("uri") != DOCS_TEMPLATE or not isinstance(completion, dict):
        return result
    values = [value for value in completion.get("values", []) if shown(str(value))]
    return {**result, "completion": {**completion, "values": values, "total": len(values), "hasMore": False}}


def _seen(resource: Mapping[str, Any], shown: Callable[[str], bool]) -> bool:
    viewed = viewed_module(str(resource.get("uri", "")))
    return viewed is None or shown(viewed)
