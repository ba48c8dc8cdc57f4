"""Server cards and the catalog are open to anyone: they must give an anonymous caller nothing more.

Under auth a card needs no token, yet names no tool (of ``/mcp`` or of a toolset endpoint) and is
the same document with a token or without; the Host guard still refuses foreign or malformed
Hosts; any Origin may read these documents and nothing else; and each client address gets only
the rate limit's share of them. Real uvicorn on a loopback port, httpx as the client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from apcore import Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.app import create_app
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer
from tests._support.modules import Echo
from tests._support.sessions import running_http

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "carol-key-" + "c" * 30
DOCUMENTS = ["/mcp/server-card", "/toolsets/team/mcp/server-card", "/.well-known/mcp/catalog.json"]
SECRET_WORDS = ["vault_purge", "roster_lookup", "admin", "team."]  # tool names and their parts


def registry() -> Registry:
    made = Registry()
    made.register("admin.vault_purge", Echo())
    made.register("team.roster_lookup", Echo())
    return made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    config = tmp_path_factory.mktemp("cards") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": {"prefix": "team."}}}}))
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(KEY, "carol", scopes="admin"),),
        auth_tool_scopes=("admin.*=admin",),
        mcp_config=str(config),
    )
    async with running_http(Bridge.build(registry(), settings)) as base:
        yield base


async def test_documents_need_no_token_and_name_no_tool(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        anonymous = [await http.get(path) for path in DOCUMENTS]
        signed_in = [await http.get(path, headers=bearer(KEY)) for path in DOCUMENTS]
        protected = await http.get("/mcp")
    assert [response.status_code for response in anonymous] == [200, 200, 200]
    assert protected.status_code == 401  # the control: the endpoint itself still wants a token
    for response in anonymous:
        leaked = [word for word in SECRET_WORDS if word in response.text]
        assert leaked == [], f"{response.url.path} names {leaked}"
    # Nothing in them depends on who asks: a token shows no more.
    assert [response.text for response in signed_in] == [response.text for response in anonymous]


async def test_card_points_at_the_metadata_the_challenge_names(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        card = (await http.get(DOCUMENTS[0])).json()
        challenge = (await http.post("/mcp", json={})).headers["www-authenticate"]
    authentication = card["remotes"][0]["authentication"]
    assert authentication["required"] is True
    assert f'resource_metadata="{authentication["resourceMetadata"]}"' in challenge


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1:8000 x", "[::1", "a" * 300])
async def test_a_foreign_or_malformed_host_is_refused(url: str, host: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        answers = [await http.get(path, headers={"Host": host}) for path in DOCUMENTS]
    assert [response.status_code for response in answers] == [421, 421, 421]


async def test_oversized_headers_are_refused(url: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.get(DOCUMENTS[0], headers={"X-Filler": "f" * 70_000})
    assert response.status_code == 431


async def test_any_origin_may_read_the_documents_and_nothing_else(url: str) -> None:
    foreign = {"Origin": "https://elsewhere.example"}
    async with httpx.AsyncClient(base_url=url) as http:
        reads = [await http.get(path, headers=foreign) for path in DOCUMENTS]
        writes = [await http.post(path, headers=foreign) for path in DOCUMENTS]
        endpoint = await http.get("/mcp", headers={**foreign, **bearer(KEY)})
        metadata = await http.get("/.well-known/oauth-protected-resource/mcp", headers=foreign)
    assert [response.status_code for response in reads] == [200, 200, 200]
    assert [response.status_code for response in writes] == [403, 403, 403]
    assert (endpoint.status_code, metadata.status_code) == (403, 403)


async def test_each_client_address_gets_only_the_rate_limits_share() -> None:
    app = create_app(registry(), Settings(rate_limit=0.001, rate_burst=2))

    async def answers(address: str, count: int) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app, client=(address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
            return [await http.get(DOCUMENTS[2 * (index % 2)]) for index in range(count)]  # card, catalog, ...

    first = await answers("203.0.113.7", 3)
    other = await answers("203.0.113.8", 1)
    assert [response.status_code for response in first] == [200, 200, 429]
    assert int(first[2].headers["retry-after"]) >= 1
    assert first[2].headers["access-control-allow-origin"] == "*"
    assert other[0].status_code == 200  # another address has its own bucket
