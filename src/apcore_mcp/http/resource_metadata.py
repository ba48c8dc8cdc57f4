"""RFC 9728 protected-resource metadata documents, served for each of this server's protected resources.

Which URLs name those resources is the call path's to say too (its sign-in challenges name
them), so they are derived in ``calls/signin.py``.

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
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from apcore_mcp.calls.principal import check_scopes, parse_scope_rules
from apcore_mcp.calls.signin import Resource
from apcore_mcp.settings import Settings


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
