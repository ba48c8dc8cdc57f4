"""What an HTTP client sees with auth on: metadata documents, 401/403/400 answers and their headers, exactly.

The server runs under uvicorn on 127.0.0.1; its configured public URL is a proxy's
(``https://mcp.example.test``), so every URL it sends comes from settings, never from the
request. The issuer's JWKS is served through respx.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import respx
from mcp.shared.auth import ProtectedResourceMetadata

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import (
    ALICE_KEY,
    BOB_KEY,
    ISSUER,
    JWKS_URL,
    Issuer,
    api_key_entry,
    bearer,
    role_executor,
)
from tests._support.hostile import explorer_call
from tests._support.sessions import running_http

PUBLIC = "https://mcp.example.test"
MCP = f"{PUBLIC}/mcp"
METADATA = f"{PUBLIC}/.well-known/oauth-protected-resource"


def jwt_settings(**changes: Any) -> Settings:
    values: dict[str, Any] = {
        "auth": "jwt",
        "public_url": PUBLIC,
        "auth_issuer": ISSUER,
        "auth_jwks_url": JWKS_URL,
        "explorer": True,
        "allow_execute": True,
    }
    return Settings(**{**values, **changes})


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    bridge = Bridge.build(role_executor(), settings)
    async with running_http(bridge) as url, httpx.AsyncClient(base_url=url, timeout=10) as http:
        yield http


async def test_metadata_documents_name_each_resource_exactly(issuer: Issuer) -> None:
    settings = jwt_settings(auth_scopes=("mcp:use",), auth_tool_scopes=("admin.*=admin",))
    async with serving(settings) as http:
        for path in ("/mcp", "/sse", "/explorer"):
            response = await http.get(f"/.well-known/oauth-protected-resource{path}")
            assert response.status_code == 200
            assert response.json() == {
                "resource": f"{PUBLIC}{path}",
                "authorization_servers": [ISSUER],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["admin", "mcp:use"],
                "resource_name": "apcore-mcp",
            }
            assert str(ProtectedResourceMetadata.model_validate(response.json()).resource) == f"{PUBLIC}{path}"
        assert (await http.get("/.well-known/oauth-protected-resource")).status_code == 404


async def test_no_token_is_401_pointing_at_the_resource_metadata(issuer: Issuer) -> None:
    async with serving(jwt_settings()) as http:
        for path, resource in [
            ("/mcp", "mcp"),
            ("/sse", "sse"),
            ("/messages/?session_id=0", "sse"),
            ("/explorer/tools", "explorer"),
            ("/metrics", "mcp"),
            ("/openai/tools", "mcp"),
            ("/no/such/route", "mcp"),
        ]:
            response = await http.get(path)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA}/{resource}"'
            assert response.json() == {"error": "unauthorized", "error_description": "A bearer token is required"}
        # A scheme other than Bearer is no token at all.
        assert (await http.get("/openai/tools", headers={"Authorization": "Basic YTpi"})).status_code == 401


async def test_invalid_token_is_401_invalid_token(issuer: Issuer) -> None:
    async with serving(jwt_settings()) as http:
        expired = issuer.token(MCP, lifetime=-120)
        response = await http.get("/openai/tools", headers=bearer(expired))
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}/mcp", error="invalid_token", '
            'error_description="The access token expired"'
        )
        assert response.json() == {"error": "invalid_token", "error_description": "The access token expired"}
        # A token for the MCP endpoint is not one for the explorer (RFC 8707 audience).
        response = await http.get("/explorer/tools", headers=bearer(issuer.token(MCP)))
        assert response.status_code == 401
        assert (
            'error_description="The access token was not issued for this resource"'
            in response.headers["www-authenticate"]
        )
        assert (
            await http.get("/explorer/tools", headers=bearer(issuer.token(f"{PUBLIC}/explorer")))
        ).status_code == 200
        assert (await http.get("/openai/tools", headers=bearer(issuer.token(MCP)))).status_code == 200


async def test_missing_scope_is_403_insufficient_scope_naming_the_scopes(issuer: Issuer) -> None:
    settings = jwt_settings(auth_scopes=("mcp:use",), auth_route_scopes=("/metrics=metrics:read",))
    async with serving(settings) as http:
        response = await http.get("/metrics", headers=bearer(issuer.token(MCP, scope="mcp:use")))
        assert response.status_code == 403
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}/mcp", error="insufficient_scope", scope="mcp:use metrics:read"'
        )
        assert response.json()["error"] == "insufficient_scope"
        assert (await http.get("/openai/tools", headers=bearer(issuer.token(MCP)))).status_code == 403
        assert (await http.get("/openai/tools", headers=bearer(issuer.token(MCP, scope="mcp:use")))).status_code == 200
        granted = issuer.token(MCP, scope="metrics:read mcp:use")
        assert (await http.get("/metrics", headers=bearer(granted))).status_code == 200
        # Without a token, the challenge already says which scopes to ask for.
        assert (await http.get("/metrics")).headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}/mcp", scope="mcp:use metrics:read"'
        )


async def test_tokens_in_the_query_string_are_refused_everywhere(issuer: Issuer) -> None:
    token = issuer.token(MCP)
    async with serving(jwt_settings()) as http:
        for path in ("/openai/tools", "/health", "/mcp"):
            response = await http.get(path, params={"access_token": token}, headers=bearer(token))
            assert response.status_code == 400, path
            assert response.json()["error"] == "invalid_request"
            assert 'error="invalid_request"' in response.headers["www-authenticate"]
        duplicated = [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")]
        assert (await http.get("/openai/tools", headers=duplicated)).status_code == 400


async def test_health_and_ready_stay_open_and_metrics_follows_its_setting(issuer: Issuer) -> None:
    async with serving(jwt_settings()) as http:
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/ready")).status_code == 200
        assert (await http.get("/metrics")).status_code == 401
        metrics = await http.get("/metrics", headers=bearer(issuer.token(MCP)))
        assert metrics.status_code == 200
        assert 'apcore_mcp_rejected_requests_total{reason="unauthenticated"} 1.0' in metrics.text
    async with serving(jwt_settings(auth_metrics=False)) as http:
        assert (await http.get("/metrics")).status_code == 200


def tool_result(response: httpx.Response) -> tuple[int, Any]:
    """A call's HTTP status and what it gave: its structured output, or the error text it answered."""
    result = response.json()["result"]
    if result["isError"]:
        return response.status_code, result["content"][0]["text"]
    return response.status_code, result["structuredContent"]


async def test_explorer_needs_the_token_and_calls_as_the_caller(issuer: Issuer) -> None:
    explorer = f"{PUBLIC}/explorer"
    settings = jwt_settings(auth_tool_scopes=("demo.snoop=snoop",), auth_filter_tools=True)
    async with serving(settings) as http:
        assert (await http.get("/explorer/")).status_code == 200
        config = (await http.get("/explorer/config")).json()
        assert config["authRequired"] is True and config["tokenRequired"] is False
        body = {"text": "hi"}
        assert (await explorer_call(http, "", "demo.echo", body)).status_code == 401

        alice = bearer(issuer.token(explorer, roles=["writer"], scope="snoop"))
        bob = bearer(issuer.token(explorer, sub="bob", roles=["reader"]))
        ok = await explorer_call(http, "", "demo.echo", body, alice)
        assert tool_result(ok) == (200, {"echo": "hi"})
        # Filtered, a tool the apcore ACL or the tool scopes hide is absent to a call too (no 403 naming a scope).
        denied = await explorer_call(http, "", "demo.echo", body, bob)
        assert tool_result(denied) == (200, "Module not found: demo.echo")
        alice_no_scope = bearer(issuer.token(explorer, roles=["writer"]))
        refused = await explorer_call(http, "", "demo.snoop", body, alice_no_scope)
        assert tool_result(refused) == (200, "Module not found: demo.snoop")
        assert "www-authenticate" not in refused.headers
        seen = await explorer_call(http, "", "demo.snoop", body, alice)
        assert seen.status_code == 200 and not seen.json()["result"]["isError"]

        # The list shows each caller what it may call.
        listed = {tool["name"] for tool in (await http.get("/explorer/tools", headers=alice)).json()}
        assert "demo.echo" in listed and "demo.snoop" in listed and "admin.secret" not in listed
        assert (await http.get("/explorer/tools", headers=bob)).json() == []
        # A hidden tool needing confirmation is missing, as in the list: no dialog with its description.
        hidden = await explorer_call(http, "", "admin.secret", {}, alice)
        assert tool_result(hidden) == (200, "Module not found: admin.secret")


async def test_mcp_name_header_gets_the_tool_scope_check_at_http_level(issuer: Issuer) -> None:
    async with serving(jwt_settings(auth_tool_scopes=("admin.*=admin",))) as http:
        headers = {**bearer(issuer.token(MCP)), "Mcp-Method": "tools/call", "Mcp-Name": "admin.secret"}
        response = await http.post("/mcp", headers=headers, content=b"{}")
        assert response.status_code == 403
        assert response.headers["www-authenticate"].endswith('error="insufficient_scope", scope="admin"')


async def test_jwks_outage_is_503_with_retry_after() -> None:
    with respx.mock(assert_all_called=False) as router:
        router.get(JWKS_URL).mock(return_value=httpx.Response(500))
        router.route().pass_through()
        async with serving(jwt_settings()) as http:
            response = await http.get("/openai/tools", headers=bearer(Issuer().token(MCP)))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "30"
    assert response.json()["error"] == "temporarily_unavailable"


async def test_api_keys(tmp_path: Any) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"# operators\n\n{api_key_entry(BOB_KEY, 'bob', 'reader')}\n")
    settings = Settings(
        auth="api-key",
        public_url=PUBLIC,
        auth_api_keys=(api_key_entry(ALICE_KEY, "alice", "writer"),),
        auth_api_keys_file=str(keys_file),
        explorer=True,
        allow_execute=True,
    )
    async with serving(settings) as http:
        document = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert document == {"resource": MCP, "bearer_methods_supported": ["header"], "resource_name": "apcore-mcp"}
        body = {"text": "hi"}
        ok = await explorer_call(http, "", "demo.echo", body, bearer(ALICE_KEY))
        assert tool_result(ok) == (200, {"echo": "hi"})
        denied = await explorer_call(http, "", "demo.echo", body, bearer(BOB_KEY))
        assert tool_result(denied) == (200, "Access denied")  # not filtered: the ACL refuses Bob
        wrong = await explorer_call(http, "", "demo.echo", body, bearer(ALICE_KEY + "x"))
        assert wrong.status_code == 401
        assert wrong.json() == {"error": "invalid_token", "error_description": "The API key is not valid"}
