"""Sign-in asked for in HTTP terms: a ``tools/call`` the caller may not make answered 401 or 403.

Claude's clients start sign-in, or ask for more scopes, on an HTTP 401 or 403 carrying
``WWW-Authenticate``; the tool a call names is in its JSON-RPC body (and, on 2026-07-28, in the
``Mcp-Name`` header ``http/auth.py`` checks). This pure-ASGI layer runs after ``BodyGuard``, so
the body it reads is whole and bounded, and for one ``tools/call``:

1. from the anonymous principal, of a tool that is not public: 401 with the challenge naming
   the scopes the tool needs;
2. from an authenticated principal lacking one of the tool's scopes: 403 ``insufficient_scope``.

It stays out of the way, and the call router answers (``calls/authorization.py``), where HTTP
must not or cannot say it: with ``auth_filter_tools`` a tool the caller may not call is hidden,
and hidden means "not found", exactly as an absent tool (a 401 would tell it exists); in the
``tool-result`` challenge form the router's tool error carries the challenge in
``_meta["mcp/www_authenticate"]``; on legacy SSE, whose answers come on the event stream, a
refused ``/messages/`` POST would leave the client waiting for an answer that never comes; and a
call made inside another (search mode's ``invoke_tool``, a task) is judged there too.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.calls.authorization import Authorization
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.calls.signin import challenge, is_anonymous
from apcore_mcp.http.body import JSONRPC_ENDPOINT, read_replayed, replaying, send_json

if TYPE_CHECKING:
    from apcore_mcp.http.auth import AuthPolicy  # which builds this layer

logger = logging.getLogger(__name__)

_CALL = b'"tools/call"'


class ToolChallenges:
    """Pure ASGI middleware: 401/403 for a ``tools/call`` the caller may not make (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, policy: AuthPolicy, authorization: Authorization) -> None:
        self.app = app
        self.policy = policy
        self.authorization = authorization

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = principal_of(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        anonymous = principal is not None and is_anonymous(principal.identity)
        if principal is None or not (anonymous or self.authorization.tool_rules) or not _calls_tools(scope["path"]):
            await self.app(scope, receive, send)
            return
        body = await read_replayed(receive)
        if body is None:
            return  # the client left
        name = called_tool(body)
        if name is not None:
            missing = self._missing(name, principal.scopes, anonymous=anonymous)
            if missing is not None:
                await self._challenge(send, scope, name, missing, anonymous=anonymous)
                return
        await self.app(scope, replaying(body, receive), send)

    def _missing(self, name: str, held: frozenset[str], *, anonymous: bool) -> frozenset[str] | None:
        """The scopes ``name`` needs when the caller may not call it (``None``: it may)."""
        authorization = self.authorization
        if anonymous:
            return None if authorization.public(name) else self._needed(name)
        if authorization.denial(name, held) is None:
            return None
        return self._needed(name)

    def _needed(self, name: str) -> frozenset[str]:
        signin = self.authorization.signin
        return signin.scopes(name) if signin is not None else frozenset()

    async def _challenge(self, send: Send, scope: Scope, name: str, scopes: frozenset[str], *, anonymous: bool) -> None:
        resource = self.policy.resource_for(scope["path"])
        if anonymous:
            status, error, text = 401, None, f"Sign in to use {name}"
        else:
            status, error, text = 403, "insufficient_scope", f"{name} needs the scopes: {' '.join(sorted(scopes))}"
        logger.info("Asked for %s on %s (%s)", "sign-in" if anonymous else "more scopes", scope["path"], name)
        header = challenge(resource.metadata_url, error=error, scopes=scopes)
        body = {"error": error or "unauthorized", "error_description": text}
        await send_json(send, status, body, headers={"WWW-Authenticate": header, "Cache-Control": "no-store"})


def challenges_apply(authorization: Authorization) -> bool:
    """Whether HTTP may say it: the ``http`` form and no hidden tools (see the module docstring)."""
    signin = authorization.signin
    return signin is not None and signin.form == "http" and not authorization.filter_tools


def called_tool(body: bytes) -> str | None:
    """The tool a body's one JSON-RPC ``tools/call`` names (``None``: not such a call)."""
    if _CALL not in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None  # the SDK answers the parse error
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def _calls_tools(path: str) -> bool:
    return path.endswith(JSONRPC_ENDPOINT)
