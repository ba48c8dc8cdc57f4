"""Several clients at once: every reply reaches its own caller, disconnects stay local."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.modules import EchoOut, SlowIn, make_executor, make_registry, module_of
from tests._support.sessions import Inbox, open_session, running_http

CLIENTS = 10
CALLS_PER_CLIENT = 5


@pytest.fixture(params=["http", "http-modern", "http-modern-sdk", "sse", "memory", "memory-modern"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def settings_for(transport: str) -> Settings:
    """``http-modern`` answers on the direct path, ``http-modern-sdk`` through the SDK's streams."""
    return Settings(direct_path=transport != "http-modern-sdk")


@contextlib.asynccontextmanager
async def server_for(transport: str, bridge: Bridge) -> AsyncIterator[Bridge | str]:
    if transport.startswith("memory"):
        yield bridge
    else:
        async with running_http(bridge) as url:
            yield url


async def test_concurrent_clients_get_their_own_replies(transport: str) -> None:
    bridge = Bridge.build(make_executor(), settings_for(transport))

    async def one_client(target: object, index: int) -> list[str]:
        async with open_session(transport, target, Inbox()) as client:
            calls = [
                client.call_tool("demo.echo", {"text": f"client-{index}-call-{n}"}) for n in range(CALLS_PER_CLIENT)
            ]
            results = await asyncio.gather(*calls)
        return [json.loads(result.content[0].text)["echo"] for result in results]

    async with server_for(transport, bridge) as target, asyncio.timeout(60):
        replies = await asyncio.gather(*(one_client(target, i) for i in range(CLIENTS)))
    for index, texts in enumerate(replies):
        assert texts == [f"client-{index}-call-{n}" for n in range(CALLS_PER_CLIENT)]


async def test_a_client_leaving_mid_call_does_not_affect_the_others(transport: str) -> None:
    running = threading.Event()

    async def hold(seconds: float) -> dict[str, Any]:
        running.set()
        await asyncio.sleep(seconds)
        return {"echo": "done"}

    registry = make_registry()
    registry.register("demo.hold", module_of(hold, input=SlowIn, output=EchoOut))
    bridge = Bridge.build(make_executor(registry), settings_for(transport))
    async with server_for(transport, bridge) as target, asyncio.timeout(60):
        async with open_session(transport, target, Inbox()) as stayer:
            leaver_started = asyncio.Event()

            async def leaver() -> None:
                async with open_session(transport, target, Inbox()) as client:
                    call = asyncio.create_task(client.call_tool("demo.hold", {"seconds": 5}))
                    if await asyncio.to_thread(running.wait, 10):  # the call runs on the server
                        leaver_started.set()
                    call.cancel()
                    with contextlib.suppress(BaseException):
                        await call

            with contextlib.suppress(BaseException):
                await leaver()
            assert leaver_started.is_set()
            results = await asyncio.gather(*(stayer.call_tool("demo.echo", {"text": f"s{n}"}) for n in range(5)))
            assert [json.loads(r.content[0].text)["echo"] for r in results] == [f"s{n}" for n in range(5)]
            wait = await stayer.call_tool("demo.wait", {"seconds": 0.1})
            assert json.loads(wait.content[0].text) == {"echo": "done"}
