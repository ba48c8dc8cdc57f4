"""``GET /admin/pins`` and ``POST /admin/pins/approve``: an operator sees held upstream tools' diffs and accepts them.

Served only with auth on (with auth off the route does not exist: approving a tool the model will
read is never open), to a token holding ``auth_pins_scope``. The body is ``{"tools": ["server.tool",
...]}``, the names ``apcore-mcp pins approve`` takes. The current definitions come from the servers
this process has mounted; the pins file is written atomically by the same approve logic as the
command line (``upstream/pins/gate.py``), then this process follows it at once, and every other
process within its poll of the file; several workers may each approve (the write is locked). A
pins file that cannot be written (read-only) is refused with 409. Each approval is one INFO record
on ``apcore_mcp.audit``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from apcore_mcp.bridge import BridgeService
from apcore_mcp.calls.audit import audit_logger
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.upstream.pins.gate import Live, UnknownTool, approve, pin_of, unified_diff
from apcore_mcp.upstream.pins.keeper import can_write
from apcore_mcp.upstream.pins.store import PinsFileError, read_pins
from apcore_mcp.upstream.toolsets import UpstreamRuntime

PINS_PATH = "/admin/pins"
"""``GET``: the held tools with a readable diff of each (what the explorer shows before an approval)."""
PINS_APPROVE_PATH = "/admin/pins/approve"
MAX_APPROVE_BODY_BYTES = 64 * 1024
MAX_APPROVE_TOOLS = 256
_NO_STORE = {"Cache-Control": "no-store"}


def pins_routes(service: BridgeService) -> list[BaseRoute]:
    """The approve route of ``service`` (the caller adds it only with auth on)."""
    scope = service.bridge.settings.auth_pins_scope

    async def approve_route(request: Request) -> Response:
        principal = principal_of(request.scope)
        if principal is None or scope not in principal.scopes:
            return _error(403, "insufficient_scope", f"needs scope {scope}")
        tools = await _requested(request)
        if isinstance(tools, Response):
            return tools
        return await _approve(service.upstreams, tools, principal.identity.id)

    async def held_route(request: Request) -> Response:
        principal = principal_of(request.scope)
        if principal is None or scope not in principal.scopes:
            return _error(403, "insufficient_scope", f"needs scope {scope}")
        return JSONResponse({"held": await _held(service.upstreams)}, headers=_NO_STORE)

    return [
        Route(PINS_PATH, held_route, methods=["GET"]),
        Route(PINS_APPROVE_PATH, approve_route, methods=["POST"]),
    ]


async def _held(runtime: UpstreamRuntime | None) -> list[dict[str, str]]:
    """Each held tool (``server.tool``), why, and the unified diff of its pinned and current definitions."""
    keeper = runtime.pins if runtime is not None else None
    if runtime is None or keeper is None:
        return []
    live = await _live(runtime)
    pinned = await anyio.to_thread.run_sync(read_pins, keeper.path)
    shown = []
    for entry in keeper.held():
        now = live.pins.get(entry.server, {}).get(entry.tool)
        if getattr(entry, "kind", "tool") != "tool" or now is None:
            continue  # a relayed skill, or a tool the server no longer lists
        was = pinned.get(entry.server, {}).get(entry.tool)
        diff = "\n".join(unified_diff(entry.server, entry.tool, was, now))
        shown.append({"tool": f"{entry.server}.{entry.tool}", "state": entry.state, "diff": diff})
    return shown


async def _requested(request: Request) -> list[str] | Response:
    """The tool names of the body, or the 400 saying what is wrong with it."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_APPROVE_BODY_BYTES:
            return _error(413, "too_large", f"the body is larger than {MAX_APPROVE_BODY_BYTES} bytes")
    try:
        data: Any = json.loads(body)
    except ValueError:
        return _error(400, "invalid_request", 'the body must be JSON: {"tools": ["server.tool", ...]}')
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
        return _error(400, "invalid_request", '"tools" must be a non-empty list of names (server.tool)')
    if len(tools) > MAX_APPROVE_TOOLS:
        return _error(400, "invalid_request", f"at most {MAX_APPROVE_TOOLS} tools at once")
    return list(dict.fromkeys(tools))


async def _approve(runtime: UpstreamRuntime | None, tools: list[str], who: str) -> Response:
    keeper = runtime.pins if runtime is not None else None
    if runtime is None or keeper is None:
        return _error(409, "not_pinned", "no upstream tools are pinned here: nothing to approve")
    if not can_write(keeper.path):
        # Several workers never pin on first sight (they would race); an operator's approval is one
        # locked read-modify-write (gate.approve), which every worker then reloads.
        return _error(
            409,
            "read_only",
            f"the pins file {keeper.path.name} cannot be written here: approve with `apcore-mcp pins approve`"
            " and deploy the file",
        )
    live = await _live(runtime)
    try:
        approved = await anyio.to_thread.run_sync(approve, keeper.path, live, tools)
    except UnknownTool as exc:
        return _error(400, "unknown_tool", str(exc))
    except (PinsFileError, OSError) as exc:
        return _error(409, "not_written", f"the pins file was not written: {exc}")
    await runtime.recheck_pins()  # this process serves them now; the others on their next poll
    for name in approved:
        _audit(name, live, who)
    return JSONResponse({"approved": approved}, headers=_NO_STORE)


async def _live(runtime: UpstreamRuntime) -> Live:
    """What the mounted servers list now, as the pins they would take (pinned servers only)."""
    live = Live()
    for name, source in sorted(runtime.mounted.items()):
        if source.spec.pin:
            live.pins[name] = {tool.name: pin_of(tool) for tool in await source.listed_tools()}
    return live


def _audit(name: str, live: Live, who: str) -> None:
    """One record per approved tool: which, the hash now pinned, who, when, how (no definition: it is in the file)."""
    pinned = {f"{server}.{tool}": pin.sha256 for server, listed in live.pins.items() for tool, pin in listed.items()}
    record = {
        "event": "pins.approve",
        "tool": name,
        "sha256": pinned.get(name),
        "decided_by": who,
        "how": "explorer",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    audit_logger.info("%s", json.dumps(record, ensure_ascii=False, sort_keys=True))


def _error(status: int, error: str, description: str) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=_NO_STORE)
