"""Server cards (SEP-2127, draft) and the domain catalog: what a host learns before it connects.

``GET <endpoint>/server-card`` (``/mcp/server-card``, ``/toolsets/<name>/mcp/server-card``)
answers the endpoint's card as ``application/mcp-server-card+json``: name, version,
description, where to connect and in which protocol versions, its capabilities, and where the
protected resource metadata is when auth is on. ``GET /.well-known/mcp/catalog.json`` lists
every endpoint served here with a link to its card.

A card is read from the very ``Server`` that answers ``server/discover`` (identity, supported
versions, capabilities, instructions), so the two cannot disagree. It never lists tools: a card
is open to anyone, and a tool's name is only for callers allowed to see it. Every URL comes
from the configured ``public_url`` (``resource_metadata.public_base``), never from request
headers. Both documents are public (no token, CORS ``*`` for reading), pass the Host guard, and
are rate-limited per client address with the call limits' rate in a bucket of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.limits import CallLimits, Refusal
from apcore_mcp.calls.signin import MCP_RESOURCE, SSE_RESOURCE, public_base, resources_for
from apcore_mcp.http.toolsets import ToolsetEndpoints
from apcore_mcp.settings import Settings
from apcore_mcp.settings.upstreams import TOOLSETS_PREFIX

CARD_MEDIA_TYPE = "application/mcp-server-card+json"
CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_SUFFIX = "/server-card"
MAIN_CARD_PATH = MCP_RESOURCE + CARD_SUFFIX
TOOLSET_CARD_PATH = TOOLSETS_PREFIX + "/{name}" + MCP_RESOURCE + CARD_SUFFIX
CATALOG_PATH = "/.well-known/mcp/catalog.json"
CACHE_CONTROL = "public, max-age=3600"
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Content-Type",
}
_TOOLSET_CARD_PARTS = 5  # "", "toolsets", name, "mcp", "server-card"


def is_discovery_path(path: str) -> bool:
    """A card or the catalog: documents anyone may read, from any origin, with no token."""
    if path in (MAIN_CARD_PATH, CATALOG_PATH):
        return True
    parts = path.split("/")
    return (
        len(parts) == _TOOLSET_CARD_PARTS
        and path.startswith(TOOLSETS_PREFIX + "/")
        and path.endswith(MCP_RESOURCE + CARD_SUFFIX)
    )


def discover_answer(server: Server[Any]) -> types.DiscoverResult:
    """What ``server/discover`` answers a 2026-07-28 client: the fields the SDK's handler reads."""
    return types.DiscoverResult(
        supported_versions=list(MODERN_PROTOCOL_VERSIONS),
        capabilities=server.get_capabilities(protocol_version=LATEST_MODERN_VERSION),
        instructions=server.instructions,
    )


def server_card(server: Server[Any], url: str, settings: Settings, *, sse_url: str | None = None) -> dict[str, Any]:
    """The card of the endpoint at public ``url`` served by ``server`` (no tools, resources or prompts)."""
    discover = discover_answer(server)
    info = server.server_info.model_dump(by_alias=True, mode="json", exclude_none=True)
    card: dict[str, Any] = {"$schema": CARD_SCHEMA, "name": info["name"], "version": info["version"]}
    description = info.get("description") or discover.instructions
    if description:
        card["description"] = description
    card.update({key: info[key] for key in ("title", "websiteUrl", "icons") if key in info})
    auth = authentication(settings)
    versions = [*HANDSHAKE_PROTOCOL_VERSIONS, *discover.supported_versions]
    card["remotes"] = [remote("streamable-http", url, versions, auth)]
    if sse_url is not None:  # the legacy SSE transport speaks only the handshake era
        card["remotes"].append(remote("sse", sse_url, list(HANDSHAKE_PROTOCOL_VERSIONS), auth))
    card["capabilities"] = discover.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    return card


def remote(kind: str, url: str, versions: list[str], auth: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": kind, "url": url, "supportedProtocolVersions": versions}
    if auth is not None:
        entry["authentication"] = auth
    return entry


def authentication(settings: Settings) -> dict[str, Any] | None:
    """Bearer tokens, and where the RFC 9728 metadata says which (``None``: auth is off).

    Not required when some tools are public (``auth_public_tools``): a client may connect without.
    """
    if settings.auth == "none":
        return None
    metadata = resources_for(settings)["mcp"].metadata_url
    return {"required": not settings.auth_public_tools, "schemes": ["bearer"], "resourceMetadata": metadata}


def catalog(settings: Settings, toolsets: list[str]) -> dict[str, Any]:
    """Every endpoint served here (``/mcp``, then each toolset's) with the URL of its card."""
    base = public_base(settings)
    entries = [_entry(settings.name, f"{base}{MCP_RESOURCE}")]
    for name in toolsets:
        entries.append(_entry(settings.name, f"{base}{TOOLSETS_PREFIX}/{name}{MCP_RESOURCE}", toolset=name))
    return {"servers": entries}


def _entry(name: str, url: str, *, toolset: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "url": url, "serverCard": url + CARD_SUFFIX}
    if toolset is not None:
        entry["toolset"] = toolset
    return entry


class DiscoveryLimit:
    """The call limits' rate per client address, in buckets of their own (a card costs no call)."""

    def __init__(self, limits: CallLimits) -> None:
        self._limits = limits

    async def wait(self, scope: Scope) -> float:
        """0.0 when this request may be answered, else the seconds until it may."""
        limits = self._limits
        if limits.rate is None:
            return 0.0
        client = scope.get("client")
        address = str(client[0]) if client else "local"
        # The limits' current store: shared by replicas once their Redis link is up.
        return await limits.buckets.take(f"discovery:{address}", limits.rate, limits.burst, limits.clock())


def discovery_routes(bridge: Bridge, toolsets: ToolsetEndpoints | None) -> list[BaseRoute]:
    """The card of ``/mcp``, of each toolset endpoint (``toolsets``), and the domain catalog."""
    settings = bridge.settings
    limit = DiscoveryLimit(bridge.limits)
    base = public_base(settings)
    sse_url = f"{base}{SSE_RESOURCE}" if settings.workers < 2 else None

    async def main_card(request: Request) -> Response:
        return await _answer(request, limit, lambda: _card_body(bridge, f"{base}{MCP_RESOURCE}", sse_url))

    async def toolset_card(request: Request) -> Response:
        name = str(request.path_params["name"])
        found = toolsets.bridge_of(name) if toolsets is not None else None
        url = f"{base}{TOOLSETS_PREFIX}/{name}{MCP_RESOURCE}"
        return await _answer(request, limit, lambda: _card_body(found, url, None) if found is not None else None)

    async def domain_catalog(request: Request) -> Response:
        names = toolsets.names if toolsets is not None else []
        return await _answer(request, limit, lambda: (catalog(settings, names), "application/json"))

    methods = ["GET", "OPTIONS"]
    return [
        Route(MAIN_CARD_PATH, main_card, methods=methods),
        Route(TOOLSET_CARD_PATH, toolset_card, methods=methods),
        Route(CATALOG_PATH, domain_catalog, methods=methods),
    ]


def _card_body(bridge: Bridge, url: str, sse_url: str | None) -> tuple[dict[str, Any], str]:
    return server_card(bridge.server, url, bridge.settings, sse_url=sse_url), CARD_MEDIA_TYPE


async def _answer(
    request: Request, limit: DiscoveryLimit, body: Callable[[], tuple[dict[str, Any], str] | None]
) -> Response:
    """A preflight, a 429 past the rate, a 404 for an unknown toolset, else the document."""
    if request.method == "OPTIONS":
        return Response(status_code=204, headers={**CORS_HEADERS, "Access-Control-Max-Age": "3600"})
    wait = await limit.wait(request.scope)
    if wait > 0:
        refusal = Refusal("rate_limited", f"Rate limit exceeded; retry in {wait:.1f}s", wait)
        headers = {**CORS_HEADERS, "Retry-After": refusal.retry_after_header}
        return JSONResponse({"error": refusal.message}, status_code=429, headers=headers)
    document = body()
    if document is None:
        return JSONResponse({"error": "Unknown toolset"}, status_code=404, headers=CORS_HEADERS)
    content, media_type = document
    return JSONResponse(content, headers={**CORS_HEADERS, "Cache-Control": CACHE_CONTROL}, media_type=media_type)
