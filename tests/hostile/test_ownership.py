"""An app closes only what it created: a bridge handed to ``create_app`` is the caller's.

Before the bridge was split by lifetime, the app's lifespan closed the bridge it was handed
(its Executor's sync pool shut, the registry no longer followed), appended its metrics to the
bridge's observers for good, and left the replicas' Redis buckets in the bridge's limits. A
second app serving the same bridge (a restart in the same process, a test harness, an embedder
serving one registry twice in turn) then failed every sync module and missed new modules.
"""

from __future__ import annotations

import pytest
from mcp import Client

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.modules import Echo, make_registry
from tests._support.results import text_of
from tests._support.sessions import running_http


async def test_a_bridge_served_by_two_apps_in_turn_still_runs_and_follows_the_registry() -> None:
    registry = make_registry()
    bridge = Bridge.build(registry, Settings(dynamic=True))  # it builds (and lends) the Executor
    for round_ in range(2):
        async with running_http(bridge) as url, Client(f"{url}/mcp", mode="legacy", cache=None) as client:
            result = await client.call_tool("demo.path", {"start": {"x": 0, "y": 0}})  # a sync module
            assert not result.is_error, text_of(result)
            assert result.structured_content == {"echo": "1"}
            registry.register(f"late.round{round_}", Echo())
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert f"late.round{round_}" in names


async def test_an_app_leaves_the_bridge_as_it_found_it() -> None:
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"  # unreachable: the buckets fall back, still swapped in
    bridge = Bridge.build(make_registry(), Settings(redis_url=dead_redis))
    buckets = bridge.limits.buckets
    for _ in range(2):
        async with running_http(bridge) as url, Client(f"{url}/mcp", mode="legacy", cache=None) as client:
            assert not (await client.call_tool("demo.echo", {"text": "hi"})).is_error
            assert len(bridge.router.observers) == 1  # this app's metrics, and only while it serves
            assert bridge.limits.buckets is not buckets  # shared with the replicas while it serves
    assert bridge.router.observers == []
    assert bridge.parts.admission.observers == []
    assert bridge.limits.buckets is buckets


async def test_a_service_is_entered_once() -> None:
    service = BridgeService(Bridge.build(make_registry()))
    async with service:
        with pytest.raises(RuntimeError, match="entered once"):
            await service.__aenter__()
