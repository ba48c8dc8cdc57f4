"""The token exchange scene: our server with JWT auth, an authorization server and an upstream that wants
tokens issued for it, each a real app on a loopback port in this event loop, wired by an ``mcp.json``."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry
from starlette.applications import Starlette

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.app import create_app
from apcore_mcp.run.serving import bind_socket
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.source import UpstreamSource
from apcore_mcp.upstream.toolsets import UpstreamRuntime

from tests._support.auth import ISSUER, Issuer, rsa_key
from tests._support.token_server import AS_ISSUER, CLIENT_ID, CLIENT_SECRET, TokenServer, serving
from tests.upstreams.audience_server import AudienceServer

PUBLIC = "https://mcp.example.test"
MCP = f"{PUBLIC}/mcp"
LISTER_TOKEN = "lister-token-0c9b2f4e-never-shown"
SERVER = "crm"


@dataclass
class Scene:
    url: str
    """Our server's base URL."""
    inbound: Issuer
    authorization: TokenServer
    upstream: AudienceServer
    app: Starlette

    def token(self, sub: str, **claims: Any) -> str:
        """An inbound token for our server, of the subject ``sub``."""
        return self.inbound.token(MCP, sub=sub, **claims)

    @property
    def source(self) -> UpstreamSource:
        runtime = self.app.state.upstreams
        assert isinstance(runtime, UpstreamRuntime)
        return runtime.sources[SERVER]


def entry(upstream_url: str, token_endpoint: str, **auth: Any) -> dict[str, Any]:
    """The ``mcpServers`` entry: list tools with the lister token, call as each caller by token exchange."""
    return {
        "url": upstream_url,
        "headers": {"Authorization": "Bearer ${CRM_LIST_TOKEN}"},
        "auth": {
            "tokenEndpoint": token_endpoint,
            "clientId": CLIENT_ID,
            "clientSecret": "${CRM_CLIENT_SECRET}",
            **auth,
        },
    }


@contextlib.asynccontextmanager
async def scene(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    auth: bool = True,
    lifetime: int = 300,
    make_entry: Callable[[str, str], dict[str, Any]] = entry,
    **fields: Any,
) -> AsyncIterator[Scene]:
    """Everything running; ``auth`` off serves our server without authentication. ``make_entry(upstream URL,
    token endpoint)`` is the ``mcpServers`` entry (``fields`` added to it)."""
    monkeypatch.setenv("CRM_LIST_TOKEN", LISTER_TOKEN)
    monkeypatch.setenv("CRM_CLIENT_SECRET", CLIENT_SECRET)
    inbound = Issuer(keys=[rsa_key()])
    authorization = TokenServer(inbound, MCP, lifetime=lifetime)
    sock = bind_socket("127.0.0.1", 0)
    upstream_url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    upstream = AudienceServer(upstream_url, AS_ISSUER, authorization.public_pem(), LISTER_TOKEN)
    async with serving(authorization.app()) as as_base, serving(upstream.app(), sock):
        config = tmp_path / "mcp.json"
        servers = {SERVER: {**make_entry(upstream_url, f"{as_base}/token"), **fields}}
        config.write_text(json.dumps({"mcpServers": servers}))
        settings: dict[str, Any] = {"mcp_config": str(config)}
        if auth:
            jwt = {"auth_issuer": ISSUER, "auth_jwt_key": inbound.keys[0].public_pem()}
            settings |= {"auth": "jwt", "public_url": PUBLIC, **jwt}
        bridge = Bridge.build(Registry(), Settings(**settings))
        app = create_app(bridge=bridge)
        async with serving(app) as url:
            yield Scene(url, inbound, authorization, upstream, app)
