"""Per-caller tool access at the MCP layer: tool scopes on ``tools/call``, and a filtered ``tools/list``.

The HTTP middleware already refuses a call whose URL or ``Mcp-Name`` header names a tool the
token lacks scopes for; a ``tools/call`` inside a handshake-era or SSE message body is only
seen here. With ``auth_filter_tools`` a caller is listed only the tools it may call: those
whose scopes it holds and that the apcore ACL lets its identity reach (judged without
arguments, so a rule that depends on arguments decides at call time). A filtered list varies
by caller, so on 2026-07-28 it is marked ``cacheScope: "private"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apcore import Context, Identity
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from apcore_mcp.calls import CallOutcome
from apcore_mcp.errors import SafeError
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.principal import ScopeRules, principal_of, request_identity, tool_scopes


def executor_acl(executor: Any) -> Any | None:
    """The ACL an apcore ``Executor`` enforces (it has no public getter; ``set_acl`` stores it here)."""
    return getattr(executor, "_acl", None)


def acl_allows(acl: Any, module_id: str, context: Any) -> bool:
    """Whether ``acl`` lets an outside caller (apcore's ``@external``) reach the tool.

    Allowed with an approval requirement counts as allowed: the call is put to a human then,
    so the tool is the caller's to see. (``ACL.check`` answers ``False`` for it.)
    """
    return bool(acl.check_access(None, module_id, context).access == "allow")


class ToolAccess:
    """Server middleware (filtering ``tools/list``) plus the scope check the ``tools/call`` handler asks."""

    def __init__(
        self,
        *,
        tool_rules: ScopeRules = (),
        acl: Any | None = None,
        filter_list: bool = False,
        default_identity: Identity | None = None,
    ) -> None:
        self.tool_rules = tool_rules
        self.acl = acl
        self.filter_list = filter_list
        self.default_identity = default_identity

    def refusal(self, request: Any, name: str) -> CallOutcome | None:
        """An ``access_denied`` outcome when the request's token lacks ``name``'s scopes, else ``None``."""
        principal = principal_of(getattr(request, "scope", None))
        if principal is None:
            return None  # no token (stdio, auth off): scopes do not apply; the ACL still does
        missing = tool_scopes(self.tool_rules, name) - principal.scopes
        if not missing:
            return None
        message = f"Access denied: needs scope {' '.join(sorted(missing))}"
        return CallOutcome(tool=name, error=SafeError("access_denied", message))

    def listed(self, scope: Mapping[str, Any] | None, identity: Identity | None) -> Callable[[str], bool]:
        """Which tools a list shows the caller of an ASGI ``scope``: all unless lists are filtered.

        Filtered, a tool is shown when the caller's token holds its scopes (no token: not checked
        here) and the ACL lets the caller reach it (the tool name is the module id it names).
        """
        if not self.filter_list:
            return lambda _name: True
        principal = principal_of(scope)
        scopes = principal.scopes if principal is not None else None
        context = Context.create(identity=identity)  # one per list, not per tool

        def shown(name: str) -> bool:
            if scopes is not None and tool_scopes(self.tool_rules, name) - scopes:
                return False
            return self.acl is None or acl_allows(self.acl, name, context)

        return shown

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
