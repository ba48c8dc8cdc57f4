"""The operator's routes: ``GET /admin/tools``, every module not served to someone and why.

What it lists (``bridge/diagnostics.py``) is exactly what the hidden-tool rule keeps from
callers, so only an operator reaches it. With auth on, the route is always there and needs a
token holding ``auth_admin_scope`` (401 without a token, from the auth layer; 403 without the
scope, naming only the scope). With auth off, it exists only when ``admin_routes`` is on, and
answers loopback clients only (the client as ``ForwardedClient`` resolved it, so a request
relayed by a trusted proxy counts as the proxy's client); anyone else gets the 404 of an
absent route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from apcore_mcp._addresses import is_loopback_address
from apcore_mcp.bridge import BridgeService
from apcore_mcp.bridge.diagnostics import hidden_tools
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.http.pins import pins_routes

ADMIN_TOOLS_PATH = "/admin/tools"
_NO_STORE = {"Cache-Control": "no-store"}


def admin_routes(service: BridgeService, *, authenticated: bool) -> list[BaseRoute]:
    """The operator routes of the bridge ``service`` serves (none with auth off and ``admin_routes`` off)."""
    settings = service.bridge.settings
    if not authenticated and not settings.admin_routes:
        return []
    admin_scope = settings.auth_admin_scope

    async def tools(request: Request) -> Response:
        refused = operator_refusal(request, admin_scope if authenticated else None)
        if refused is not None:
            return refused
        body = {"hidden": hidden_tools(service.bridge, service.upstreams)}
        return JSONResponse(body, headers=_NO_STORE)

    approving = pins_routes(service) if authenticated else []  # approving is never open: auth only
    return [Route(ADMIN_TOOLS_PATH, tools, methods=["GET"]), *approving]


def operator_refusal(request: Request, admin_scope: str | None) -> Response | None:
    """Why ``request`` is not an operator's, as a response; ``None`` when it is.

    ``admin_scope`` set (auth on): the token must hold it. ``None`` (auth off): loopback clients only.
    """
    if admin_scope is None:
        client = request.client
        if client is None or not is_loopback_address(client.host):
            return PlainTextResponse("Not Found", status_code=404)
        return None
    principal = principal_of(request.scope)
    if principal is None or admin_scope not in principal.scopes:
        body = {"error": "insufficient_scope", "error_description": f"needs scope {admin_scope}"}
        return JSONResponse(body, status_code=403, headers=_NO_STORE)
    return None
