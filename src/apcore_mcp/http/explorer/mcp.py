"""The explorer's MCP endpoint: ``{prefix}/mcp``, the very ``/mcp`` app behind the explorer's rules.

The page drives the server through MCP itself (either era), so its calls take the path every
MCP call takes: the same session manager and direct path, the call router's authorization,
limits and approval. ``ExplorerMcp`` (pure ASGI) refuses, before the MCP app sees a request:

- a request not from the page's own origin (``same_origin``): 403;
- without the explorer token when one is needed (``ExecuteGate``; with auth on, the auth
  middleware has already checked the caller's own token): 401;
- a body that is not one JSON object: a batch 400 (one could hide a call from the checks
  below), unparseable JSON 400 (what this gate cannot read is not passed on);
- with ``allow_execute`` off, a method that runs module code: 403 naming the setting.
  ``tools/call``, and ``resources/read`` of anything but a static ``docs://`` or ``ui://`` view (a
  module resource runs its module). ``prompts/get`` renders prompt files and asks the user
  for inputs, ``completion/complete`` answers declared values: neither runs a module;
- ``tools/call`` of a destructive tool the server will not itself ask about (its approval is
  asked by our ``MCPApprovalHandler`` only) without ``X-Apcore-Confirm`` naming it: 428. In
  search mode ``invoke_tool`` is judged by the tool it invokes.

What passes reaches the MCP app with its body replayed (``BodyGuard`` already bounded it) and
the scope marked ``EXPLORER_SCOPE_KEY``, so its calls are the explorer's (``CallContext.origin``).
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.approval import mcp_approval_handler
from apcore_mcp.calls.principal import identity_of, principal_of
from apcore_mcp.http.body import read_replayed, replaying, send_json
from apcore_mcp.http.explorer.page import CONFIRM_HEADER, EXECUTE_SETTING, ExecuteGate, same_origin
from apcore_mcp.http.mcp_front import header, valid_request_id
from apcore_mcp.http.metrics import REASON_SCOPE_KEY
from apcore_mcp.mcp.edge import EXPLORER_SCOPE_KEY
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.resources import DOCS_SCHEME
from apcore_mcp.tools.views import VIEW_SCHEME

INVOKE_TOOL = "invoke_tool"
"""Search mode's meta-tool that runs another (``bridge.metatools.INVOKE_TOOL``; that module is
imported only in search mode)."""
_CONFIRM = CONFIRM_HEADER.encode()
EXECUTION_OFF = (
    f"Tool execution from the explorer is off: start the server with {EXECUTE_SETTING['flag']} "
    f"(or {EXECUTE_SETTING['env']}=true) to turn it on. {EXECUTE_SETTING['risk']}"
)

BATCH = "Batches are refused here: send one JSON-RPC message per request"
Refusal = tuple[int, str, dict[str, Any]]
"""An HTTP status, the reason counted in the metrics, and the JSON-RPC ``error`` object to answer with."""


class ExplorerMcp:
    """Pure ASGI: the explorer's rules in front of the ``/mcp`` app ``app`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, bridge: Bridge, gate: ExecuteGate) -> None:
        self.app = app
        self.bridge = bridge
        self.gate = gate
        self.max_body_bytes = bridge.settings.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if not same_origin(request):
            error = {"code": INVALID_REQUEST, "message": "The explorer's MCP endpoint serves its own page only"}
            await _refuse(scope, send, (403, "origin", error), None)
            return
        if not self.gate.admits(request):
            error = {"code": INVALID_REQUEST, "message": "A valid explorer token is required"}
            await _refuse(scope, send, (401, "unauthenticated", error), None, {"WWW-Authenticate": "Bearer"})
            return
        scope[EXPLORER_SCOPE_KEY] = True  # in place: the metrics' copy of the scope is this one
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_replayed(receive, self.max_body_bytes)
        if body is None:
            return
        if len(body) > self.max_body_bytes:  # BodyGuard answered this already; never unbounded here
            error = {"code": INVALID_REQUEST, "message": f"Request body exceeds {self.max_body_bytes} bytes"}
            await _refuse(scope, send, (413, "too_large", error), None)
            return
        try:
            message = pydantic_core.from_json(body)  # the parser McpFront and the SDK use
        except ValueError:
            await _refuse(scope, send, (400, "bad_request", {"code": PARSE_ERROR, "message": "Parse error"}), None)
            return
        request_id = message.get("id") if isinstance(message, dict) else None
        refusal = self.judge(message, scope)
        if refusal is not None:
            await _refuse(scope, send, refusal, request_id if valid_request_id(request_id) else None)
            return
        await self.app(scope, replaying(body, receive), send)

    def judge(self, message: object, scope: Scope) -> Refusal | None:
        """Why the explorer may not send ``message`` (a decoded POST body), or ``None``."""
        if not isinstance(message, dict):
            said = BATCH if isinstance(message, list) else "The body must be one JSON-RPC message"
            return 400, "bad_request", {"code": INVALID_REQUEST, "message": said}
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if not self.bridge.settings.allow_execute and runs_module(method, params):
            data = {"setting": "allow_execute", "flag": EXECUTE_SETTING["flag"], "env": EXECUTE_SETTING["env"]}
            return 403, "execution_off", {"code": INVALID_REQUEST, "message": EXECUTION_OFF, "data": data}
        if method != "tools/call":
            return None
        target = self.target_of(params, scope)
        if target is None or not self.needs_confirmation(target) or header(scope, _CONFIRM) == target.name:
            return None
        return 428, "unconfirmed", self.confirmation(target)

    def target_of(self, params: dict[str, Any], scope: Scope) -> ToolRecord | None:
        """The tool a ``tools/call`` runs: in search mode, what ``invoke_tool`` invokes.

        ``invoke_tool`` runs only a tool its caller may see, and answers any other exactly as a
        missing one; the call router answers a tool ``auth_filter_tools`` hides as a missing one
        too: so does this gate (no 428 telling a hidden tool exists).
        """
        name = params.get("name")
        if self.bridge.search is not None and name == INVOKE_TOOL:
            arguments = params.get("arguments")
            name = arguments.get("name") if isinstance(arguments, dict) else None
            if not isinstance(name, str) or not self._visible(scope, name):
                return None
            return self.bridge.full_catalog.get(name)
        if not isinstance(name, str) or not self.bridge.access.listed(scope, identity_of(scope))(name):
            return None
        return self.bridge.catalog.get(name)

    def _visible(self, scope: Scope, name: str) -> bool:
        principal = principal_of(scope)
        scopes = principal.scopes if principal is not None else None
        return self.bridge.authorization.visible(scopes, identity_of(scope))(name)

    def needs_confirmation(self, record: ToolRecord) -> bool:
        """Destructive, and no approval the server asks the page for itself (then it asks, and the page answers)."""
        if not record.hints.get("destructiveHint", False):
            return False
        asked = record.requires_approval and mcp_approval_handler(self.bridge.executor) is not None
        return not asked

    def confirmation(self, record: ToolRecord) -> dict[str, Any]:
        # Only a tool the caller may see gets here (``target_of``): its description is the caller's to read.
        confirm = {"tool": record.name, "description": record.description, "header": CONFIRM_HEADER}
        message = f"{record.name} is destructive: confirm the call to run it"
        return {"code": INVALID_REQUEST, "message": message, "data": {"confirm": confirm}}


def runs_module(method: object, params: dict[str, Any]) -> bool:
    """Whether a request of ``method`` runs module code (see the module docstring)."""
    if method == "tools/call":
        return True
    if method == "resources/read":
        uri = params.get("uri")
        return not (isinstance(uri, str) and uri.startswith((DOCS_SCHEME, VIEW_SCHEME)))
    return False


async def _refuse(
    scope: Scope,
    send: Send,
    refusal: Refusal,
    request_id: str | int | None,
    headers: dict[str, str] | None = None,
) -> None:
    status, reason, error = refusal
    scope[REASON_SCOPE_KEY] = reason
    await send_json(send, status, {"jsonrpc": "2.0", "id": request_id, "error": error}, headers=headers)
