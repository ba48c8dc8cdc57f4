"""RFC 9728 protected-resource metadata: which URLs name this server's protected resources.

Every URL comes from the configured ``public_url`` (the base clients use, proxy path prefix
included), never from request headers: behind a proxy the Host, scheme and path the app sees
are not the ones the client used. For ``public_url = https://example.com/sub`` the MCP
endpoint's resource is ``https://example.com/sub/mcp`` and its metadata is published where
RFC 9728 section 3.1 puts it, ``https://example.com/.well-known/oauth-protected-resource/sub/mcp``
(the proxy forwards that path unchanged), and also at
``https://example.com/sub/.well-known/oauth-protected-resource/mcp`` for clients that only
know the prefix (the proxy strips ``/sub`` as for every other route).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from apcore_mcp.calls.principal import check_scopes, parse_scope_rules
from apcore_mcp.settings import Settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_RESOURCE = "/mcp"
SSE_RESOURCE = "/sse"


@dataclass(frozen=True)
class Resource:
    """One protected resource: its identifier, where its metadata is, and the audiences it accepts."""

    path: str
    """The app-local path the resource is served at (``/mcp``)."""
    url: str
    """The resource identifier clients use (``https://example.com/sub/mcp``): the default audience."""
    metadata_url: str
    """Where its metadata document is, as the client must fetch it (sent in ``WWW-Authenticate``)."""
    metadata_paths: tuple[str, ...]
    """The app-local paths serving that document."""
    audiences: tuple[str, ...]


def public_base(settings: Settings) -> str:
    """``public_url``, else ``http://HOST:PORT`` from the bind settings (no trailing slash)."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    return http_origin(settings.host, settings.port)


def http_origin(host: str, port: int) -> str:
    """``http://HOST:PORT``, an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def make_resource(path: str, base: str, audiences: Iterable[str] = ()) -> Resource:
    """The resource served at app path ``path`` under the public ``base``."""
    parts = urlsplit(base)
    origin, prefix = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    url = f"{base}{path}"
    local = tuple(dict.fromkeys((f"{WELL_KNOWN}{path}", f"{WELL_KNOWN}{prefix}{path}")))
    return Resource(
        path=path,
        url=url,
        metadata_url=f"{origin}{WELL_KNOWN}{prefix}{path}",
        metadata_paths=local,
        audiences=tuple(audiences) or (url,),
    )


def resources_for(settings: Settings) -> dict[str, Resource]:
    """``mcp`` (``/mcp``), ``sse`` (``/sse`` and ``/messages/``) and, when served, ``explorer``."""
    base = public_base(settings)
    paths = {"mcp": MCP_RESOURCE, "sse": SSE_RESOURCE}
    if settings.explorer:
        paths["explorer"] = settings.explorer_prefix
    return {name: make_resource(path, base, settings.auth_audience) for name, path in paths.items()}


def all_scopes(settings: Settings) -> list[str]:
    """Every scope some rule asks for, for ``scopes_supported``."""
    scopes = set(check_scopes(settings.auth_scopes, "auth_scopes"))
    for name in ("auth_route_scopes", "auth_tool_scopes"):
        for _pattern, needed in parse_scope_rules(getattr(settings, name), name):
            scopes |= needed
    return sorted(scopes)


def metadata_document(resource: Resource, settings: Settings) -> dict[str, Any]:
    """The RFC 9728 document for ``resource``; ``resource`` is exactly the identifier clients check."""
    document: dict[str, Any] = {"resource": resource.url}
    if settings.auth == "jwt" and settings.auth_issuer:
        document["authorization_servers"] = [settings.auth_issuer]
    document["bearer_methods_supported"] = ["header"]
    scopes = all_scopes(settings)
    if scopes:
        document["scopes_supported"] = scopes
    document["resource_name"] = settings.name
    return document


def metadata_routes(resources: Iterable[Resource], settings: Settings) -> list[BaseRoute]:
    """``GET`` routes serving each resource's document at each of its local paths."""
    routes: list[BaseRoute] = []
    for resource in resources:
        body = metadata_document(resource, settings)

        async def document(_request: Request, body: dict[str, Any] = body) -> JSONResponse:
            return JSONResponse(body, headers={"Cache-Control": "public, max-age=300"})

        routes += [Route(path, document, methods=["GET"]) for path in resource.metadata_paths]
    return routes
