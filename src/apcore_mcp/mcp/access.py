"""A filtered ``tools/list``: each caller is listed only the tools it may call.

With ``auth_filter_tools`` a tool is listed when ``Authorization.visible`` says so: the
caller's token holds its scopes and the apcore ACL lets the caller's identity reach it
(judged without arguments, so a rule that depends on arguments decides at call time). The
same rule hides tools from the explorer's list, ``search_tools`` and ``describe_tool``; calls
are checked by the call router (``authorization.py``), whatever the list showed. A filtered
list varies by caller, so on 2026-07-28 it is marked ``cacheScope: "private"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apcore import Identity
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from apcore_mcp.authorization import Authorization
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.principal import principal_of, request_identity


class ToolAccess:
    """Server middleware filtering ``tools/list`` (with ``filter_list``), and who calls without HTTP."""

    def __init__(
        self,
        authorization: Authorization | None = None,
        *,
        filter_list: bool = False,
        default_identity: Identity | None = None,
    ) -> None:
        self.authorization = authorization if authorization is not None else Authorization()
        self.filter_list = filter_list
        self.default_identity = default_identity

    def listed(self, scope: Mapping[str, Any] | None, identity: Identity | None) -> Callable[[str], bool]:
        """Which tools a list shows the caller of an ASGI ``scope``: all unless lists are filtered.

        Filtered, the tools it may call (``Authorization.visible``; no token: scopes not checked).
        """
        if not self.filter_list:
            return lambda _name: True
        principal = principal_of(scope)
        return self.authorization.visible(principal.scopes if principal is not None else None, identity)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if not self.filter_list or ctx.method != "tools/list" or not isinstance(result, dict):
            return result
        shown = self.listed(getattr(ctx.request, "scope", None), request_identity(ctx.request, self.default_identity))
        tools = [tool for tool in result.get("tools", []) if shown(str(tool.get("name")))]
        filtered = {**result, "tools": tools}
        if is_modern(ctx):
            filtered["cacheScope"] = "private"
        return filtered
