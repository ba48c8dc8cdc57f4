"""The browser explorer: a page listing the tools, their schemas, and (opt-in) a way to call them.

Calling a tool from a browser is the MCP Inspector lesson (CVE-2025-49596): it is off unless
``allow_execute``. The page calls over MCP, through one door, ``{prefix}/mcp`` (``mcp.py``):
only from the page's own origin (scheme, host and port: another local app's page is another
origin, ``same_origin``), no CORS header is ever sent, Host/Origin are checked by the app's
guard, and a server reachable from other machines requires a bearer token compared in constant
time (``ExecuteGate``). With ``auth`` on, that token is the caller's own (checked by
``http/auth.py``) and with ``auth_filter_tools`` the list shows only what the caller may call.
The old JSON call route ``POST {prefix}/tools/{name}/call`` is gone: it answers 410 naming the door.

A tool of an upstream MCP server shows ``upstream``: its server and its own name there (the
readable id ``everything.get_sum`` calls ``get-sum``). That is said here, where the tool itself
is shown, and not on ``/ready``, which is open without authentication.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.approval import mcp_approval_handler
from apcore_mcp.calls.person_approval import APPROVALS_PATH
from apcore_mcp.calls.principal import identity_of
from apcore_mcp.http.admin import ADMIN_TOOLS_PATH
from apcore_mcp.http.explorer.views import FRAME_PATH, view_frame_routes
from apcore_mcp.http.exposure import local_connection
from apcore_mcp.http.pins import PINS_PATH
from apcore_mcp.settings import Settings
from apcore_mcp.settings.declared import options
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.upstream.module import upstream_origin

logger = logging.getLogger(__name__)

PAGE_NAME = "explorer.html"
_DEFAULT_PORTS = {"http": 80, "https": 443}
PROTOCOL_VERSIONS = sorted(SUPPORTED_PROTOCOL_VERSIONS, reverse=True)
"""The MCP revisions the page may offer, newest first (dates sort as strings)."""
_EXECUTE = next(option for option in options() if option.name == "allow_execute")
EXECUTE_SETTING = {
    "flag": str(_EXECUTE.flag),
    "env": str(_EXECUTE.env_var),
    "risk": "Anyone who can open the explorer can then run this server's tools from a browser "
    "(off loopback with the explorer token, or their own token when authentication is on).",
}
"""How ``allow_execute`` is turned on and what that risks (``/config`` sends it; refusals name it)."""
CONFIRM_HEADER = "x-apcore-confirm"
"""Set to the tool's name by the page once the person confirmed the call in its dialog."""


@cache
def load_page() -> tuple[bytes, str]:
    """The page and its Content-Security-Policy (inline script and style allowed by hash only)."""
    packaged = resources.files("apcore_mcp").joinpath("static", PAGE_NAME)
    source = Path(__file__).resolve().parents[4] / "static" / PAGE_NAME
    html = packaged.read_text("utf-8") if packaged.is_file() else source.read_text("utf-8")
    return html.encode(), content_security_policy(html)


def content_security_policy(html: str) -> str:
    """A policy that allows exactly the page's own inline ``<script>``/``<style>`` blocks."""

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
        digests = (base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() for block in blocks)
        return " ".join(f"'sha256-{digest}'" for digest in digests) or "'none'"

    return (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
        "connect-src 'self'; img-src 'self' data:; media-src data:; base-uri 'none'; form-action 'none'; "
        "frame-src 'self'; frame-ancestors 'none'"
    )


def tool_summary(record: ToolRecord, upstream: dict[str, str] | None = None) -> dict[str, Any]:
    """What the list shows of a tool; ``upstream`` (``{"server", "tool"}``) for a tool of an upstream server."""
    summary = {
        "name": record.name,
        "description": record.description,
        "annotations": dict(record.hints),
        "requiresApproval": record.meta["apcore/requiresApproval"],
        "streaming": record.meta["apcore/streaming"],
        "tags": list(record.tags),
    }
    return summary if upstream is None else {**summary, "upstream": upstream}


def tool_detail(record: ToolRecord, upstream: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        **tool_summary(record, upstream),
        "inputSchema": record.input_schema,
        "outputSchema": record.output_schema or None,
        "documentation": record.documentation or None,
        "view": record.view.uri if record.view is not None else None,
    }


class ExecuteGate:
    """Who may run tools from the explorer: the page's own origin, with a token when one is needed.

    A configured token always applies (unless authentication is on: then the caller's own
    bearer token is checked by the auth middleware instead). Without one, a token is needed once the server is
    reachable from other machines: bound (by whatever started it) to a non-loopback address,
    or reached over a non-loopback interface. A random token is then made and written once to a
    file only its owner can read, whose path is logged.
    """

    def __init__(self, settings: Settings, *, authenticated: bool = False, made: str | None = None) -> None:
        """``made``: the token to use when none is configured (several workers share one), else random."""
        # With authentication on, the auth middleware already demands the caller's own token.
        self.enabled = settings.explorer and settings.allow_execute and not authenticated
        self.configured = settings.execute_token is not None
        self.token = settings.execute_token or made or secrets.token_urlsafe(32)
        self.exposed = False
        self._announced = False
        if self.enabled and not self.configured and not settings.is_loopback:
            self.expose()

    def expose(self) -> None:
        """The server is reachable from other machines: from now on every call needs the token."""
        self.exposed = True
        self._announce()

    def required(self, scope: Scope) -> bool:
        if not self.enabled:
            return False
        if self.configured or self.exposed:
            return True
        if local_connection(scope):
            return False
        self._announce()
        return True

    def _announce(self) -> None:
        if self.enabled and not self.configured and not self._announced:
            self._announced = True
            # The token goes to a file only its owner can read, never to the log (logs are shipped).
            descriptor, path = tempfile.mkstemp(prefix="apcore-mcp-explorer-", suffix=".token")
            with os.fdopen(descriptor, "w") as file:
                file.write(self.token)
            logger.warning("Explorer execution is reachable from other machines; token for this run in %s", path)

    def admits(self, request: Request) -> bool:
        return not self.required(request.scope) or _bearer_matches(request, self.token)


def explorer_routes(bridge: Bridge, gate: ExecuteGate) -> list[BaseRoute]:
    settings = bridge.settings
    prefix = settings.explorer_prefix
    catalog = bridge.catalog

    html, policy = load_page()  # read and hashed at start-up, not on a request
    page_headers = {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }

    async def page(_request: Request) -> Response:
        return Response(html, media_type="text/html; charset=utf-8", headers=page_headers)

    async def redirect(request: Request) -> Response:
        return RedirectResponse(f"{request.scope.get('root_path', '')}{prefix}/", status_code=308)

    admin_served = settings.auth != "none" or settings.admin_routes
    queue_served = mcp_approval_handler(bridge.executor) is not None  # http/approvals.py serves our handler's

    async def config(request: Request) -> JSONResponse:
        root = request.scope.get("root_path", "")  # the app may be mounted inside another (embedding.md)
        return JSONResponse(
            {
                "server": {"name": settings.name, "version": settings.server_version()},
                "allowExecute": settings.allow_execute,
                "tokenRequired": gate.enabled and gate.required(request.scope),
                "authRequired": settings.auth != "none",
                "mcpPath": f"{root}{prefix}/mcp",
                "viewFramePath": f"{root}{prefix}{FRAME_PATH}",
                "readyPath": f"{root}/ready",
                # The operator's list (http/admin.py): the page asks it with its token; refused, it shows nothing.
                "adminToolsPath": f"{root}{ADMIN_TOOLS_PATH}" if admin_served else None,
                # Held upstream tools' diffs and their approval (http/pins.py): auth only, else never offered.
                "pinsPath": f"{root}{PINS_PATH}" if settings.auth != "none" else None,
                # The approver's queue (http/approvals.py): refused to anyone else, it shows nothing.
                "approvalsPath": f"{root}{APPROVALS_PATH}" if queue_served else None,
                "serverCardPath": f"{root}/mcp/server-card" if settings.server_card else None,
                "protocolVersions": PROTOCOL_VERSIONS,
                "executeSetting": EXECUTE_SETTING,
            }
        )

    def origin(record: ToolRecord) -> dict[str, str] | None:
        return upstream_origin(bridge.registry, record.name)

    async def list_tools(request: Request) -> JSONResponse:
        shown = bridge.access.listed(request.scope, identity_of(request.scope))
        records = [record for record in catalog.records() if shown(record.name)]
        return JSONResponse([tool_summary(record, origin(record)) for record in records])

    def visible(request: Request, record: ToolRecord) -> bool:
        return bridge.access.listed(request.scope, identity_of(request.scope))(record.name)

    async def get_tool(request: Request) -> JSONResponse:
        record = catalog.get(request.path_params["name"])
        if record is None or not visible(request, record):
            return _error(404, f"Tool '{request.path_params['name']}' not found")
        return JSONResponse(tool_detail(record, origin(record)))

    async def retired(request: Request) -> JSONResponse:
        """The old JSON call route, gone: 410, naming the one door for calls (``{prefix}/mcp``)."""
        successor = f"{request.scope.get('root_path', '')}{prefix}/mcp"
        message = f"POST {prefix}/tools/{{name}}/call was removed: send an MCP tools/call to {successor}"
        headers = {"Link": f'<{successor}>; rel="successor-version"'}
        return JSONResponse({"error": message, "mcp": successor}, status_code=410, headers=headers)

    return [
        Route(prefix, redirect, methods=["GET"]),
        Route(f"{prefix}/", page, methods=["GET"]),
        Route(f"{prefix}/config", config, methods=["GET"]),
        Route(f"{prefix}/tools", list_tools, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}", get_tool, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}/call", retired, methods=["POST"]),
        *view_frame_routes(prefix),
    ]


def same_origin(request: Request) -> bool:
    """A browser request from this very page: its ``Origin`` is our scheme, host and port.

    A request without ``Origin`` and ``Sec-Fetch-Site`` is not from a browser page (curl,
    a script), which CSRF cannot forge; the token rule still applies to it.
    """
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    scheme = request.url.scheme
    return _origin_key(origin) == _origin_key(f"{scheme}://{request.headers.get('host', '')}")


def _origin_key(origin: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, parts.hostname, port


def _bearer_matches(request: Request, token: str) -> bool:
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)
