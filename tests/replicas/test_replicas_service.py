"""One replica's side of running several: its settings, ``/ready`` while Redis is away or while
stopping, and the change messages it exchanges with the others. In process; Redis is a loopback
port nobody listens on (the replica must serve regardless)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

import httpx
import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.app import create_app
from apcore_mcp.http.shutdown import drain_when_stopping, reset_streams
from apcore_mcp.mcp.notifier import ListChange
from apcore_mcp.replicas.broadcast import decode_change, encode_change
from apcore_mcp.run.serving import make_http_server
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.settings.env import settings_from_env
from apcore_mcp.testing import free_port

from tests._support.modules import make_executor
from tests._support.sessions import running_http

DEAD_REDIS = f"redis://127.0.0.1:{free_port()}/0"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"redis_url": "http://127.0.0.1:6379"}, "redis_url"),
        ({"broadcast_changes": True, "dynamic": True}, "broadcast_changes"),
        ({"broadcast_changes": True, "redis_url": "redis://127.0.0.1:6379/0"}, "broadcast_changes"),
        ({"redis_prefix": "has space"}, "redis_prefix"),
    ],
)
def test_replica_settings_are_checked(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(SettingError) as refused:
        Settings(**changes)
    assert refused.value.field == field


def test_replica_settings_from_the_environment() -> None:
    settings, _ = settings_from_env(
        {
            "APCORE_MCP_REDIS_URL": "rediss://cache.internal:6380/2",
            "APCORE_MCP_BROADCAST_CHANGES": "true",
            "APCORE_MCP_DYNAMIC": "true",
            "APCORE_MCP_REDIS_PREFIX": "mcp-prod:",
        }
    )
    assert (settings.redis_url, settings.broadcast_changes, settings.redis_prefix) == (
        "rediss://cache.internal:6380/2", True, "mcp-prod:",
    )  # fmt: skip


def test_change_messages_round_trip_and_strangers_are_ignored() -> None:
    change = ListChange(tools=True, resources=True, updated=("apcore://docs/a.b",))
    assert decode_change(encode_change(change, "r1")) == ("r1", change)
    for stranger in (b"not json", b"[]", b'{"v": 2, "origin": "x"}', b'{"v": 1}', b'{"v": 1, "origin": 3}'):
        assert decode_change(stranger) is None


@pytest.fixture
def bridge() -> Bridge:
    settings = Settings(dynamic=True, broadcast_changes=True, redis_url=DEAD_REDIS, redis_prefix="t:")
    return Bridge.build(make_executor(), settings)


async def test_redis_unreachable_from_the_start_is_degraded_not_down(
    bridge: Bridge, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        async with running_http(bridge) as url, httpx.AsyncClient(base_url=url, timeout=5) as http:
            body: dict[str, Any] = {}
            for _ in range(200):  # bounded: the first subscription attempt fails within a second
                response = await http.get("/ready")
                body = response.json()
                if "degraded" in body:
                    break
                await asyncio.sleep(0.02)
            assert response.status_code == 200 and body["status"] == "ready", body
            assert "unreachable" in body["degraded"]["redis"], body
            assert (await http.get("/health")).status_code == 200
            tools = await http.get("/openai/tools")  # and it serves
            assert tools.status_code == 200 and tools.json()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("Redis unreachable for change broadcast" in m for m in messages), messages
    assert any("request_state_keys is not" in m for m in messages), messages  # several replicas, no shared key


async def test_ready_is_503_from_the_stop_signal_while_health_stays_200() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    app = create_app(bridge=bridge)
    server = make_http_server(app, bridge)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://localhost") as http,
    ):
        assert (await http.get("/ready")).status_code == 200
        server.handle_exit(signal.SIGTERM, None)
        stopping = await http.get("/ready")
        assert (stopping.status_code, stopping.json()) == (503, {"status": "stopping"})
        assert (await http.get("/health")).status_code == 200  # liveness: draining is not dead


class _SignalledServer:
    should_exit = True

    def handle_exit(self, sig: int, frame: Any) -> None:  # pragma: no cover - never delivered
        pass


async def test_under_plain_uvicorn_the_stop_is_seen_and_announced() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    stopped: list[bool] = []
    previous = signal.signal(signal.SIGTERM, _SignalledServer().handle_exit)  # what uvicorn installs
    try:
        async with asyncio.timeout(5):
            await drain_when_stopping(bridge.router, 0.1, lambda: stopped.append(True))
    finally:
        signal.signal(signal.SIGTERM, previous)
        reset_streams()  # the drain ended every event stream of this process: later tests stream again
    assert stopped == [True]
