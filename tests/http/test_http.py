"""The HTTP app itself: health, Host/Origin protection on every route, stateless mode."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.modules import EXPECTED_TOOLS, make_executor
from tests._support.results import text_of
from tests._support.sessions import running_http

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
ROUTES = [
    ("GET", "/health"),
    ("GET", "/ready"),
    ("GET", "/metrics"),
    ("GET", "/openai/tools"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("GET", "/sse"),
    ("POST", "/messages/?session_id=x"),
    ("GET", "/explorer/"),
    ("GET", "/explorer/tools"),
    ("POST", "/explorer/mcp"),
    ("GET", "/no/such/route"),
]


async def test_health_reports_modules_and_uptime() -> None:
    bridge = Bridge.build(make_executor(), Settings(version="9.9.9"))
    async with running_http(bridge) as url, httpx.AsyncClient() as http:
        response = await http.get(f"{url}/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["module_count"] == len(EXPECTED_TOOLS)
    assert body["version"] == "9.9.9"
    assert isinstance(body["uptime_seconds"], float) and body["uptime_seconds"] >= 0


async def test_post_mcp_is_served_without_redirect() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    async with running_http(bridge) as url, httpx.AsyncClient() as http:
        response = await http.post(f"{url}/mcp", json=INIT, headers=MCP_HEADERS)
    assert response.status_code == 200
    assert response.headers["mcp-session-id"]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
async def test_foreign_host_and_origin_are_refused_on_every_route(bind: str, method: str, path: str) -> None:
    settings = Settings(host=bind, allowed_hosts=("mcp.example.com",), explorer=True, allow_execute=True)
    bridge = Bridge.build(make_executor(), settings)
    async with running_http(bridge) as url, httpx.AsyncClient() as http:
        bad_host = await http.request(method, f"{url}{path}", headers={"Host": "evil.example", **MCP_HEADERS})
        bad_origin = await http.request(
            method, f"{url}{path}", headers={"Origin": "http://evil.example", **MCP_HEADERS}
        )
        allowed = await http.get(f"{url}/health", headers={"Host": "mcp.example.com:8443"})
        allowed_origin = await http.get(f"{url}/health", headers={"Origin": "https://mcp.example.com"})
    assert (bad_host.status_code, bad_host.json()) == (421, {"error": "Invalid Host header"})
    assert (bad_origin.status_code, bad_origin.json()) == (403, {"error": "Invalid Origin header"})
    assert allowed.status_code == 200
    assert allowed_origin.status_code == 200


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stateless_mode_serves_both_eras(mode: str) -> None:
    bridge = Bridge.build(make_executor(), Settings(stateless=True))
    async with running_http(bridge) as url:
        for _ in range(2):  # each client, like each replica, starts from nothing
            async with Client(f"{url}/mcp", mode=mode, cache=None) as client:
                result = await client.call_tool("demo.echo", {"text": "replica"})
                assert json.loads(text_of(result)) == {"echo": "replica"}
    assert bridge.notifier.connection_count == 0
