"""2026-07-28 ``Mcp-Param-*`` headers are checked against the tool's advertised input schema.

Our server hands the SDK the schema from the catalog (no ``tools/list`` through the middleware
for every call); with ``auth_filter_tools`` the list differs per caller, so the SDK's own listing
(which knows the caller) decides instead. Both must reject a header that disagrees with the body.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from apcore import Registry
from mcp import Client
from mcp_types.jsonrpc import HEADER_MISMATCH

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer
from tests._support.modules import Routed
from tests._support.sessions import running_http

KEY = "param-headers-key-" + "k" * 24

TOOL = "geo.routed"
MODERN = "2026-07-28"


def routed_bridge(**settings: Any) -> Bridge:
    registry = Registry()
    registry.register(TOOL, Routed())
    return Bridge.build(registry, Settings(**settings))


async def raw_call(url: str, region_header: str | None, key: str | None = None) -> httpx.Response:
    """A 2026-07-28 tools/call with ``region=eu`` in the body and the given ``Mcp-Param-Region``."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": TOOL,
            "arguments": {"region": "eu", "text": "hi"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": TOOL,
    }
    if region_header is not None:
        headers["mcp-param-region"] = region_header
    if key is not None:
        headers.update(bearer(key))
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(f"{url}/mcp", json=body, headers=headers)


@pytest.mark.parametrize("filtered", [False, True], ids=["catalog-lookup", "per-caller-listing"])
async def test_param_header_must_match_the_body(filtered: bool) -> None:
    # A per-caller listing needs callers: API keys (filtering under --auth none is refused).
    auth = {"auth": "api-key", "auth_api_keys": (api_key_entry(KEY, "ann"),), "auth_filter_tools": True}
    bridge = routed_bridge(**(auth if filtered else {}))
    key = KEY if filtered else None
    assert (bridge.server.get_tool_input_schema is None) is filtered
    async with running_http(bridge) as url:
        matching = await raw_call(url, "eu", key)
        assert matching.status_code == 200, matching.text
        assert matching.json()["result"]["structuredContent"] == {"region": "eu", "text": "hi"}
        for header in ("us", None):  # a different value, or none at all for an annotated argument
            refused = await raw_call(url, header, key)
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"]["code"] == HEADER_MISMATCH


async def test_sdk_client_mirrors_the_header_and_no_listing_runs_per_call() -> None:
    bridge = routed_bridge()
    methods: Counter[str] = Counter()

    async def record(ctx: Any, call_next: Any) -> Any:
        methods[ctx.method] += 1
        return await call_next(ctx)

    bridge.server.middleware.insert(0, record)
    async with running_http(bridge) as url, Client(f"{url}/mcp", mode="auto", cache=None) as client:
        assert client.protocol_version == MODERN
        await client.list_tools()  # the client learns the annotation and sends Mcp-Param-Region itself
        for region in ("eu", "us", "ap"):
            result = await client.call_tool(TOOL, {"region": region, "text": "x"})
            assert result.structured_content == {"region": region, "text": "x"}
    assert methods["tools/call"] == 3
    assert methods["tools/list"] == 1  # the client's own: none run behind each call
