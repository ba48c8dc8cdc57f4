"""Server cards and the domain catalog: content, headers, CORS preflight, the off switch, a public URL.

The card must never contradict what a real SDK client learns from ``server/discover`` (2026-07-28)
or ``initialize`` (2025-11-25) on the same server. Documents are read through the whole app
(``httpx.ASGITransport``: no lifespan needed, the card reads the built server); the catalog of
toolset endpoints, which exist only once the app serves, over uvicorn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.app import create_app
from apcore_mcp.settings import Settings

from tests._support.modules import make_executor
from tests._support.sessions import running_http

CARD = "/mcp/server-card"
CATALOG = "/.well-known/mcp/catalog.json"
PUBLIC = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def bridge() -> Bridge:
    return Bridge.build(make_executor(), Settings(name="cards", version="4.5.6"))


async def get(app_or_bridge: Any, path: str, **kwargs: Any) -> httpx.Response:
    app = create_app(bridge=app_or_bridge) if isinstance(app_or_bridge, Bridge) else app_or_bridge
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=PUBLIC) as http:
        return await http.request(kwargs.pop("method", "GET"), path, **kwargs)


async def test_card_says_who_and_where_with_the_cache_and_cors_headers(bridge: Bridge) -> None:
    response = await get(bridge, CARD)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/mcp-server-card+json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["cache-control"] == "public, max-age=3600"
    card = response.json()
    assert (card["name"], card["version"]) == ("cards", "4.5.6")
    assert [(remote["type"], remote["url"]) for remote in card["remotes"]] == [
        ("streamable-http", "http://127.0.0.1:8000/mcp"),
        ("sse", "http://127.0.0.1:8000/sse"),
    ]
    assert "2025-11-25" in card["remotes"][1]["supportedProtocolVersions"]
    assert "2026-07-28" not in card["remotes"][1]["supportedProtocolVersions"]  # SSE is handshake-only
    assert "authentication" not in card["remotes"][0]  # auth is off
    assert not {"tools", "resources", "prompts"} & set(card)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_card_never_contradicts_what_a_client_learns_on_connecting(bridge: Bridge, mode: str) -> None:
    card = (await get(bridge, CARD)).json()
    streamable = card["remotes"][0]
    async with Client(bridge.server, mode=mode, cache=None) as client:
        info = client.server_info
        assert info is not None
        assert (card["name"], card["version"]) == (info.name, info.version)
        assert client.protocol_version in streamable["supportedProtocolVersions"]
        assert card.get("description") == (info.description or client.instructions)
        discovered = client.session.discover_result
        if mode == "auto":
            assert discovered is not None
            capabilities = discovered.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
            assert card["capabilities"] == capabilities
            assert set(discovered.supported_versions) <= set(streamable["supportedProtocolVersions"])
        else:  # the handshake era's capabilities name the same primitives
            assert client.server_capabilities.tools is not None and "tools" in card["capabilities"]


async def test_preflight_is_answered_for_any_origin(bridge: Bridge) -> None:
    headers = {"Origin": "https://host.example", "Access-Control-Request-Method": "GET"}
    preflight = await get(bridge, CARD, method="OPTIONS", headers=headers)
    read = await get(bridge, CATALOG, headers={"Origin": "https://host.example"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert preflight.headers["access-control-allow-methods"] == "GET"
    assert (read.status_code, read.headers["access-control-allow-origin"]) == (200, "*")


async def test_one_setting_turns_both_documents_off() -> None:
    app = create_app(make_executor(), Settings(server_card=False))
    assert [(await get(app, path)).status_code for path in (CARD, CATALOG)] == [404, 404]


async def test_behind_a_public_url_every_link_is_the_public_one() -> None:
    settings = Settings(public_url="https://mcp.example.com/sub/", forwarded_allow_ips=("127.0.0.1",))
    app = create_app(make_executor(), settings)
    forged = {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http"}
    card = (await get(app, CARD, headers=forged)).json()
    listed = (await get(app, CATALOG, headers=forged)).json()
    assert card["remotes"][0]["url"] == "https://mcp.example.com/sub/mcp"
    assert listed == {
        "servers": [
            {
                "name": "apcore-mcp",
                "url": "https://mcp.example.com/sub/mcp",
                "serverCard": "https://mcp.example.com/sub/mcp/server-card",
            }
        ]
    }


@pytest.fixture
async def with_toolsets(tmp_path: Path) -> AsyncIterator[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    async with running_http(Bridge.build(make_executor(), Settings(mcp_config=str(config)))) as base:
        yield base


async def test_catalog_lists_each_endpoint_and_each_card_answers(with_toolsets: str) -> None:
    async with httpx.AsyncClient(base_url=with_toolsets) as http:
        listed = (await http.get(CATALOG)).json()["servers"]
        # Links name the configured public base (here the default 127.0.0.1:8000), not the test's port.
        cards = [await http.get(entry["serverCard"].removeprefix(PUBLIC)) for entry in listed]
        unknown = await http.get("/toolsets/nobody/mcp/server-card")
    assert [entry["url"] for entry in listed] == [f"{PUBLIC}/mcp", f"{PUBLIC}/toolsets/team/mcp"]
    assert listed[1]["toolset"] == "team"
    assert [card.status_code for card in cards] == [200, 200]
    assert cards[1].json()["remotes"] == [
        {
            "type": "streamable-http",
            "url": f"{PUBLIC}/toolsets/team/mcp",
            "supportedProtocolVersions": cards[0].json()["remotes"][0]["supportedProtocolVersions"],
        }
    ]
    assert unknown.status_code == 404
