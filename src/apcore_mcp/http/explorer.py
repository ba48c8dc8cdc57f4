"""The browser explorer: a page listing the tools, their schemas, and (opt-in) a way to call them.

Calling a tool from a browser is the MCP Inspector lesson (CVE-2025-49596): it is off unless
``allow_execute``; when on, only JSON POSTs are accepted (a form cannot send one without
CORS, and no CORS header is ever sent), Host/Origin are checked by the app's guard, and a
server not bound to loopback requires a bearer token compared in constant time. With ``auth``
on, that token is the caller's own (checked by ``http/auth.py``), calls run as the caller's
identity, and with ``auth_filter_tools`` the list shows only what the caller may call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from apcore_mcp.bridge import Bridge
from apcore_mcp.content import RenderedOutput
from apcore_mcp.context import CallContext
from apcore_mcp.principal import identity_of, principal_of
from apcore_mcp.records import ToolRecord

logger = logging.getLogger(__name__)

PAGE_NAME = "explorer.html"
MAX_BODY_BYTES = 4 * 1024 * 1024
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
    source = Path(__file__).resolve().parents[3] / "static" / PAGE_NAME
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
        "frame-ancestors 'none'"
    )


def tool_summary(record: ToolRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "description": record.description,
        "annotations": dict(record.hints),
        "requiresApproval": record.meta["apcore/requiresApproval"],
        "streaming": record.meta["apcore/streaming"],
        "tags": list(record.tags),
    }


def tool_detail(record: ToolRecord) -> dict[str, Any]:
    return {
        **tool_summary(record),
        "inputSchema": record.input_schema,
        "outputSchema": record.output_schema or None,
        "documentation": record.documentation or None,
    }


def execute_token(bridge: Bridge) -> str | None:
    """The token browser calls must present, or ``None`` when none is needed.

    Needed when execution is on and the server is reachable from other machines; a random
    one is made (and logged once) if none was configured. A configured token always applies.
    """
    settings = bridge.settings
    if not (settings.explorer and settings.allow_execute):
        return None
    if settings.execute_token:
        return settings.execute_token
    if settings.is_loopback:
        return None
    token = secrets.token_urlsafe(32)
    logger.warning("Explorer execution is on for a non-loopback address; token for this run: %s", token)
    return token


def explorer_routes(bridge: Bridge, token: str | None) -> list[BaseRoute]:
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

    async def redirect(_request: Request) -> Response:
        return RedirectResponse(f"{prefix}/", status_code=308)

    async def config(_request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "server": {"name": settings.name, "version": settings.server_version()},
                "allowExecute": settings.allow_execute,
                "tokenRequired": token is not None,
                "authRequired": settings.auth != "none",
            }
        )

    async def list_tools(request: Request) -> JSONResponse:
        return JSONResponse([tool_summary(record) for record in catalog.records() if visible(request, record)])

    def visible(request: Request, record: ToolRecord) -> bool:
        if not settings.auth_filter_tools:
            return True
        principal = principal_of(request.scope)
        scopes = principal.scopes if principal is not None else None
        return bridge.access.may_call(record.name, identity_of(request.scope), scopes)

    async def get_tool(request: Request) -> JSONResponse:
        record = catalog.get(request.path_params["name"])
        if record is None or not visible(request, record):
            return _error(404, f"Tool '{request.path_params['name']}' not found")
        return JSONResponse(tool_detail(record))

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        if not settings.allow_execute:
            return _error(403, "Tool execution is disabled")
        if token is not None and not _bearer_matches(request, token):
            return _error(401, "A valid explorer token is required", {"WWW-Authenticate": "Bearer"})
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _error(415, "Content-Type must be application/json")
        record = catalog.get(name)
        if record is None:
            return _error(404, f"Tool '{name}' not found")
        confirmed = request.headers.get(CONFIRM_HEADER) == name
        if needs_confirmation(record) and not confirmed:
            return confirmation_required(record)
        body = await _read_body(request)
        if body is None:
            return _error(413, f"Request body exceeds {MAX_BODY_BYTES} bytes")
        try:
            arguments = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "Request body is not valid JSON")
        if not isinstance(arguments, dict):
            return _error(400, "Request body must be a JSON object of tool arguments")
        call = CallContext(identity=identity_of(request.scope), origin="explorer", confirmed=confirmed)
        outcome = await bridge.router.call(name, arguments, call)
        if outcome.error is not None:
            return _error(_STATUS_BY_KIND[outcome.error.kind], outcome.error.message)
        if outcome.rendered is None:
            return _error(400, "This tool needs to ask an MCP client something; call it from an MCP client")
        return Response(result_body(outcome.rendered), media_type="application/json")

    return [
        Route(prefix, redirect, methods=["GET"]),
        Route(f"{prefix}/", page, methods=["GET"]),
        Route(f"{prefix}/config", config, methods=["GET"]),
        Route(f"{prefix}/tools", list_tools, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}", get_tool, methods=["GET"]),
        Route(f"{prefix}/tools/{{name}}/call", call_tool, methods=["POST"]),
    ]


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


async def _read_body(request: Request) -> bytes | None:
    """The request body, or ``None`` once it grows past ``MAX_BODY_BYTES`` (chunked too)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def _bearer_matches(request: Request, token: str) -> bool:
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode())


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)
