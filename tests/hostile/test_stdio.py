"""stdio under attack: malformed lines get JSON-RPC errors, huge or pathological lines are refused
without stopping the server, odd outputs arrive."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests._support.hostile import INIT, REPO
from tests._support.results import text_of

LINE_LIMIT = 4 * 1024 * 1024  # max_body_bytes, the bound of a line too


class StdioPeer:
    """A raw line-level client of ``server.py stdio``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, message: Any) -> None:
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        await self.proc.stdin.drain()

    async def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message


async def start(*settings: str) -> AsyncIterator[StdioPeer]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.hostile.server",
        "stdio",
        *settings,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=2**20,
        cwd=REPO,
    )
    try:
        yield StdioPeer(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.fixture
async def peer() -> AsyncIterator[StdioPeer]:
    async for running in start():
        await running.send(INIT)
        assert (await running.receive())["id"] == 0
        await running.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield running


def call(request_id: int, name: str = "hostile.echo") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}


@pytest.mark.parametrize(
    ("line", "code", "answer_id"),
    [
        (b"{not json", -32700, None),
        (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}).encode(), -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}).encode(), -32600, None),
        (json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]).encode(), -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": 7}).encode(), -32600, 7),
        (json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": 5}}).encode(), -32602, 8),
    ],
    ids=["not-json", "object-id", "float-id", "batch", "no-method", "invalid-params"],
)
async def test_a_malformed_line_gets_a_json_rpc_error_and_the_next_line_is_served(
    peer: StdioPeer, line: bytes, code: int, answer_id: object
) -> None:
    await peer.send(line)
    error = await peer.receive(10)  # these got no reply at all before
    assert (error["error"]["code"], error["id"]) == (code, answer_id)
    await peer.send(call(42))
    assert (await peer.receive(10))["id"] == 42


@pytest.mark.slow
async def test_a_line_over_max_body_bytes_is_refused_and_the_server_keeps_serving(peer: StdioPeer) -> None:
    arguments = '{"blob": "' + "x" * (LINE_LIMIT + 1024) + '"}'
    line = (
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hostile.echo","arguments":'
        + arguments.encode()
    )
    await peer.send(line + b"}}")  # used to end the process: LimitOverrunError out of the reader (at 64 MiB)
    error = await peer.receive(60)
    assert (error.get("error", {}).get("code"), error["id"]) == (-32600, None), str(error)[:300]
    assert "exceeds" in error["error"]["message"]
    await peer.send(call(10))
    answer = await peer.receive(10)
    assert answer["id"] == 10 and answer["result"]["isError"] is False
    assert peer.proc.returncode is None


def many_keys_call(request_id: int, keys: int) -> bytes:
    arguments = {f"k{i}": i for i in range(keys)}
    return json.dumps({**call(request_id), "params": {"name": "hostile.echo", "arguments": arguments}}).encode()


@pytest.mark.parametrize(
    ("keys", "words"),
    [(200_000, "has more than 100000 JSON keys and elements"), (1_000_000, f"exceeds {LINE_LIMIT} bytes")],
)
async def test_a_line_with_too_many_keys_is_refused_and_a_ping_behind_it_answered(
    peer: StdioPeer, keys: int, words: str
) -> None:
    line = many_keys_call(11, keys)  # 200,000 keys: 3.6 MB; 1,000,000: 19 MB
    started = time.perf_counter()
    await peer.send(line)
    await peer.send({"jsonrpc": "2.0", "id": 12, "method": "ping"})
    refused = await peer.receive(60)  # a million keys held stdio for 19 s, then ran the call
    answered = await peer.receive(10)
    print(
        f"\n{keys:,} keys ({len(line):,} bytes) refused on stdio, ping answered: {time.perf_counter() - started:.2f} s"
    )
    error = {"code": -32600, "message": f"Invalid request: the message {words}"}
    assert (refused["id"], refused.get("error")) == (None, error), str(refused)[:300]  # was the call's result
    assert answered == {"jsonrpc": "2.0", "id": 12, "result": {}}


async def test_a_line_nested_10000_deep_is_refused_by_its_depth(peer: StdioPeer) -> None:
    arguments = '{"a":' * 10_000 + "1" + "}" * 10_000
    await peer.send(
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"hostile.echo","arguments":'
        + arguments.encode()
        + b"}}"
    )
    refused = await peer.receive(10)  # was -32700 "not valid JSON": the parser's recursion limit
    assert refused["error"] == {
        "code": -32600,
        "message": "Invalid request: the message is nested more than 64 levels deep",
    }
    await peer.send(call(14))
    assert (await peer.receive(10))["id"] == 14


async def test_closing_stdin_cancels_the_call_in_flight(tmp_path: Path) -> None:
    async for running in start(f"marker_dir={tmp_path}"):
        await running.send(INIT)
        await running.receive()
        await running.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await running.send(call(1, "hostile.sleep"))
        for _ in range(500):
            if list(tmp_path.glob("started-*")):
                break
            await asyncio.sleep(0.02)
        assert running.proc.stdin is not None
        running.proc.stdin.close()  # the client goes away
        assert await asyncio.wait_for(running.proc.wait(), 20) == 0
    assert sorted(path.name.split("-")[0] for path in tmp_path.iterdir()) == ["cancelled", "started"]


def stdio_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "tests.hostile.server", "stdio"], cwd=REPO)


async def test_odd_and_huge_outputs_reach_a_real_stdio_client() -> None:
    async with Client(stdio_params(), mode="legacy") as client:
        odd = await client.call_tool("hostile.surrogate", {})  # used to kill the server (exit 1)
        assert json.loads(text_of(odd)) == {"name": "caf\ufffd.txt", "ratio": None}
        huge = await client.call_tool("hostile.huge", {})  # used to block stdio for 100 s
        assert huge.is_error is True
        assert text_of(huge).startswith("Output of more than 104857")
        assert text_of(huge).endswith("exceeds the limit of 16777216 bytes")
        again = await client.call_tool("hostile.echo", {})
        assert again.is_error is False
