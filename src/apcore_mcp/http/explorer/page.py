"""The browser explorer: a page listing the tools, their schemas, and (opt-in) a way to call them.

Calling a tool from a browser is the MCP Inspector lesson (CVE-2025-49596): it is off unless
``allow_execute``; when on, only JSON POSTs from the page's own origin (scheme, host and port:
another local app's page is another origin) are accepted, no CORS header is ever sent,
Host/Origin are checked by the app's guard, and a server reachable from other machines
requires a bearer token compared in constant time (``ExecuteGate``). With ``auth`` on, that
token is the caller's own (checked by ``http/auth.py``), calls run as the caller, through the
call router like any MCP call (its tool scopes, ACL identity, approval, rate limit and
concurrency share), and with ``auth_filter_tools`` the list shows only what the caller may call
(a tool it hides is "not found" to a call, as an absent one: ``Authorization.hides``).

A tool of an upstream MCP server shows ``upstream``: its server and its own name there (the
readable id ``everything.get_sum`` calls ``get-sum``). That is said here, where the tool itself
is shown, and not on ``/ready``, which is open without authentication.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
from collections.abc import Awaitable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.context import CallContext
from apcore_mcp.calls.limits import principal_key
from apcore_mcp.calls.principal import identity_of, principal_of
from apcore_mcp.calls.router import CallOutcome
from apcore_mcp.calls.spans import incoming_context
from apcore_mcp.http.explorer.views import FRAME_PATH, view_frame_routes
from apcore_mcp.http.exposure import local_connection
from apcore_mcp.http.metrics import REASON_SCOPE_KEY
from apcore_mcp.settings import Settings
from apcore_mcp.settings.declared import options
from apcore_mcp.tools.content import RenderedOutput
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.upstream.module import upstream_origin

logger = logging.getLogger(__name__)

CALL_ROUTE_DEPRECATED = "@1795824000"
"""When ``POST {prefix}/tools/{name}/call`` was deprecated (2026-11-28), as RFC 9745's
``Deprecation`` header writes a date: the page calls over ``{prefix}/mcp``, the one door for calls."""

PAGE_NAME = "explorer.html"
MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of lists and objects accepted in explorer call arguments."""
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
_STATUS_BY_KIND = {
    "not_found": 404,
    "invalid_input": 400,
    "access_denied": 403,
    "approval": 403,
    "refused": 429,
    "timeout": 504,
    "cancelled": 499,
    "module": 500,
    "output": 500,
    "internal": 500,
}


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

    def __init__(self, settings: Settings, *, authenticated: bool = False) -> None:
        # With authentication on, the auth middleware already demands the caller's own token.
        self.enabled = settings.explorer and settings.allow_execute and not authenticated
        self.configured = settings.execute_token is not None
        self.token = settings.execute_token or secrets.token_urlsafe(32)
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

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        if not settings.allow_execute:
            return _error(403, "Tool execution is disabled")
        if not same_origin(request):
            return _error(403, "Tool calls are accepted from the explorer page's own origin only")
        if not gate.admits(request):
            return _error(401, "A valid explorer token is required", {"WWW-Authenticate": "Bearer"})
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _error(415, "Content-Type must be application/json")
        confirmed = request.headers.get(CONFIRM_HEADER) == name
        call = CallContext(
            identity=identity_of(request.scope),
            principal=principal_of(request.scope),
            caller=principal_key(request.scope),
            origin="explorer",
            confirmed=confirmed,
            trace_context=incoming_context(request.headers),
        )
        record = catalog.get(name)
        if record is None or bridge.authorization.hides(name, call):  # hidden: exactly the absent answer
            return _error(404, f"Tool '{name}' not found")
        if needs_confirmation(record) and not confirmed:
            return confirmation_required(record)
        arguments = parse_arguments(await request.body())
        if isinstance(arguments, str):
            return _error(400, arguments)
        return await _run(bridge, request, name, arguments, call)

    warned = False

    async def deprecated_call(request: Request) -> Response:
        """The old JSON call route: served under the same rules, saying it is deprecated and what
        replaces it (``Deprecation`` and ``Link`` headers), with a WARNING the first time."""
        nonlocal warned
        if not warned:
            warned = True
            logger.warning("POST %s/tools/{name}/call is deprecated and will be removed: call %s/mcp", prefix, prefix)
        response = await call_tool(request)
        response.headers["Deprecation"] = CALL_ROUTE_DEPRECATED
        successor = f"{request.scope.get('root_path', '')}{prefix}/mcp"
        response.headers["Link"] = f'<{successor}>; rel="successor-version"'
        return response

    return [
        Route(prefix, redirect, methods=["GET"]),
        Route(f"{prefix}/", page, methods=["GET"]),
        Route(f"{prefix}/config", config, methods=["GET"]),
        Route(f"{prefix}/tools", list_tools, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}", get_tool, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}/call", deprecated_call, methods=["POST"]),
        *view_frame_routes(prefix),
    ]


async def _run(bridge: Bridge, request: Request, name: str, arguments: dict[str, Any], call: CallContext) -> Response:
    """Run the call through the router (which authorizes and admits it); cancel it if the client goes away."""
    outcome = await until_disconnect(request, bridge.router.call(name, arguments, call))
    if outcome is None:
        return _error(499, "Call cancelled: the client disconnected")
    if outcome.refusal is not None:  # the rate limit or the concurrency share
        status = 429 if outcome.refusal.reason == "rate_limited" else 503
        return _error(status, outcome.refusal.message, {"Retry-After": outcome.refusal.retry_after_header})
    if outcome.error is not None:
        if outcome.error.kind == "refused":  # apcore's call-chain guards, not our rate limit
            request.scope[REASON_SCOPE_KEY] = "call_refused"
        return _error(_STATUS_BY_KIND[outcome.error.kind], outcome.error.message)
    if outcome.carried is not None:
        return carried_response(outcome.carried)
    if outcome.rendered is None:
        return _error(400, "This tool needs to ask an MCP client something; call it from an MCP client")
    return Response(result_body(outcome.rendered), media_type="application/json")


async def until_disconnect(request: Request, call: Awaitable[CallOutcome]) -> CallOutcome | None:
    """``call``'s outcome, or ``None`` when the client disconnected first (the call is then cancelled)."""
    outcome: CallOutcome | None = None

    async def watch(scope: anyio.CancelScope) -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch, tasks.cancel_scope)
        outcome = await call
        tasks.cancel_scope.cancel()
    return outcome


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


def parse_arguments(body: bytes) -> dict[str, Any] | str:
    """The JSON object of tool arguments, or the reason it is not one (nested too deep included)."""
    try:
        arguments = json.loads(body or b"{}")
    except (ValueError, RecursionError):
        return "Request body is not valid JSON (or is nested too deeply)"
    if not isinstance(arguments, dict):
        return "Request body must be a JSON object of tool arguments"
    if nesting_depth(arguments, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        return f"Arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    return arguments


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply ``value``'s lists and objects nest (counting stops just past ``limit``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return deepest


def needs_confirmation(record: ToolRecord) -> bool:
    """A destructive or approval-gated tool never runs on one click."""
    return record.requires_approval or record.hints.get("destructiveHint", False)


def confirmation_required(record: ToolRecord) -> JSONResponse:
    """428: the page asks the person in a dialog, then repeats the call with the confirmation header."""
    reasons = [
        reason
        for flag, reason in (
            (record.requires_approval, "requires approval"),
            (record.hints.get("destructiveHint", False), "is destructive"),
        )
        if flag
    ]
    return JSONResponse(
        {
            "error": f"{record.name} {' and '.join(reasons)}: confirm the call to run it",
            "confirm": {"tool": record.name, "description": record.description, "header": CONFIRM_HEADER},
        },
        status_code=428,
    )


def result_body(rendered: RenderedOutput) -> bytes:
    """``{"result": <structured output or null>, "content": [<media blocks>]}``; the JSON text is reused."""
    media = [block for block in rendered.blocks if not (block.get("type") == "text" and block["text"] == rendered.text)]
    body = b'{"result":' + (rendered.text or "null").encode()
    if media:
        body += b',"content":' + json.dumps(media, ensure_ascii=False).encode()
    return body + b"}"


def carried_response(result: dict[str, Any]) -> Response:
    """A tool result carried as is (an upstream server's tool), in the explorer's shape.

    A result flagged ``isError`` is the tool's failure, answered as one (500, its text).
    """
    content = result.get("content") or []
    if result.get("isError"):
        text = " ".join(b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str))
        return _error(_STATUS_BY_KIND["module"], text or "The tool reported an error")
    return JSONResponse({"result": result.get("structuredContent"), "content": content})


def _bearer_matches(request: Request, token: str) -> bool:
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)
