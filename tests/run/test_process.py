"""The CLI and ``serve()`` as processes: arguments, exit codes, stdio hygiene, signals, BackgroundServer."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from apcore import Registry
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from apcore_mcp import BackgroundServer, serve
from apcore_mcp.testing import free_port

from tests._support.modules import EXPECTED_TOOLS, make_executor
from tests._support.processes import wait_ok
from tests._support.results import text_of

NAP_MODULE = """
import asyncio
from pydantic import BaseModel

class NapIn(BaseModel):
    seconds: float

class NapOut(BaseModel):
    slept: float

class Nap:
    description = "Sleep, then answer"
    input_schema = NapIn
    output_schema = NapOut

    async def execute(self, inputs, context):
        await asyncio.sleep(inputs["seconds"])
        return {"slept": inputs["seconds"]}
"""

NOISY_MODULE = """
import sys
from pydantic import BaseModel

class Empty(BaseModel):
    pass

class Out(BaseModel):
    ok: bool

class Noisy:
    description = "Prints to stdout, which must not reach the protocol stream"
    input_schema = Empty
    output_schema = Out

    def execute(self, inputs, context):
        print("stray print from a module")
        sys.stdout.write("stray write\\n")
        return {"ok": True}
"""


@pytest.fixture(scope="module")
def extensions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("extensions")
    (root / "util").mkdir()
    (root / "util" / "nap.py").write_text(textwrap.dedent(NAP_MODULE))
    (root / "util" / "noisy.py").write_text(textwrap.dedent(NOISY_MODULE))
    return root


def cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "apcore_mcp", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def http_process(extensions: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    command = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(extensions), "--transport"]
    command += ["streamable-http", "--port", str(port), "--log-level", "WARNING", "--explorer"]
    # As a context manager, Popen closes its pipes on the way out (else: a ResourceWarning).
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ok(f"{url}/health", proc, details=lambda: _stderr(proc))
            yield proc, url
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


# -- arguments and exit codes -----------------------------------------------------------------


def test_help_lists_every_flag() -> None:
    result = cli("--help")
    assert result.returncode == 0
    for flag in (
        "--extensions-dir",
        "--transport",
        "--host",
        "--port",
        "--name",
        "--server-version",
        "--log-level",
        "--tags",
        "--prefix",
        "--allowed-hosts",
        "--dynamic",
        "--stateless",
    ):
        assert flag in result.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([], 2, "--extensions-dir"),
        (["--extensions-dir", "/does/not/exist"], 1, "Error: extensions directory does not exist: /does/not/exist"),
        (["--extensions-dir", __file__], 1, f"Error: extensions path is not a directory: {__file__}"),
        (["--extensions-dir", ".", "--port", "-1"], 1, "Error: port must be between 0 (any free port) and 65535"),
        (["--extensions-dir", ".", "--port", "70000"], 1, "Error: port must be between 0 (any free port) and 65535"),
        (["--extensions-dir", ".", "--port", "abc"], 2, "invalid int value"),
        (["--extensions-dir", ".", "--name", ""], 1, "Error: server name must not be empty"),
        (["--extensions-dir", ".", "--name", "x" * 256], 1, "Error: server name must not exceed 255 characters"),
        (["--extensions-dir", ".", "--transport", "websocket"], 2, "invalid choice"),
        (["--extensions-dir", ".", "--log-level", "TRACE"], 2, "invalid choice"),
        (["--extensions-dir", ".", "--tags", ""], 1, "Error: --tags: Tag values must not be empty"),
        (["--extensions-dir", ".", "--prefix", ""], 1, "Error: --prefix: prefix must not be empty"),
        (["--extensions-dir", ".", "--execute-token", "short"], 1, "Error: --execute-token: execute_token must be"),
        (["--extensions-dir", ".", "--shutdown-timeout", "-1"], 1, "Error: --shutdown-timeout: shutdown_timeout must"),
    ],
)
def test_bad_arguments_exit_with_a_clear_message(args: list[str], code: int, message: str) -> None:
    result = cli(*args)
    assert result.returncode == code
    assert message in result.stderr
    assert result.stdout == ""


def test_busy_port_exits_2(extensions: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("--extensions-dir", str(extensions), "--transport", "streamable-http", "--port", str(port))
    assert result.returncode == 2
    assert f"Error: cannot start the server on 127.0.0.1:{port}" in result.stderr


def test_serve_validates_before_starting() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="Expected Registry or Executor instance, got dict"):
        serve({})
    with pytest.raises(ValueError, match="Unknown transport: 'websocket'. Must be one of: stdio, streamable-http, sse"):
        serve(registry, transport="websocket")
    with pytest.raises(ValueError, match=r"Port must be between 0 \(any free port\) and 65535, got -1"):
        serve(registry, transport="streamable-http", port=-1)
    with pytest.raises(ValueError, match="Unknown log level"):
        serve(registry, log_level="TRACE")


# -- stdio -----------------------------------------------------------------------------------


def _rpc(message_id: int | None, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if message_id is not None:
        message["id"] = message_id
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


INITIALIZE_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def _readline(stream: IO[str], timeout: float) -> str:
    """One line from a child's pipe, failing the test instead of hanging when none comes."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box, f"no line within {timeout} s"
    return box[0]


def _wait_for_line(stream: IO[str], text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in (line := _readline(stream, max(deadline - time.monotonic(), 0.1))):
        assert line, f"stream ended before {text!r}"


def test_stdio_stdout_carries_only_json_rpc(extensions: Path) -> None:
    script = (
        _rpc(1, "initialize", INITIALIZE_PARAMS)
        + _rpc(None, "notifications/initialized")
        + _rpc(2, "tools/list", {})
        + _rpc(3, "tools/call", {"name": "util.noisy", "arguments": {}})
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(extensions), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(script)
    proc.stdin.flush()
    lines = [proc.stdout.readline() for _ in range(3)]
    proc.stdin.close()  # the client going away ends the server
    proc.stdin = None
    rest, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0
    messages = [json.loads(line) for line in [*lines, *rest.splitlines()] if line.strip()]
    assert [m.get("id") for m in messages] == [1, 2, 3]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert json.loads(messages[2]["result"]["content"][0]["text"]) == {"ok": True}
    assert "stray print from a module" in stderr
    assert "apcore-mcp server started, serving 2 tools over stdio: 2 local" in stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stdio_stops_cleanly_on_signal(extensions: Path, sig: signal.Signals) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(extensions)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            # Signal a server that is up: it has answered the handshake and logged that it started.
            proc.stdin.write(_rpc(1, "initialize", INITIALIZE_PARAMS))
            proc.stdin.flush()
            assert json.loads(_readline(proc.stdout, timeout=10))["id"] == 1
            _wait_for_line(proc.stderr, "apcore-mcp server started", timeout=10)
            started = time.monotonic()
            proc.send_signal(sig)
            proc.wait(8)
            assert proc.returncode == 0
            assert time.monotonic() - started < 5
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)


# -- HTTP ------------------------------------------------------------------------------------


def test_cli_http_serves_every_route(http_process: tuple[subprocess.Popen[str], str]) -> None:
    _, url = http_process
    for path, kind in [
        ("/health", "json"),
        ("/ready", "json"),
        ("/metrics", "text/plain"),
        ("/openai/tools", "json"),
        ("/explorer/", "text/html"),
        ("/explorer/tools", "json"),
    ]:
        response = httpx.get(f"{url}{path}", timeout=5)
        assert response.status_code == 200, path
        assert kind in response.headers["content-type"], path
    names = [tool["function"]["name"] for tool in httpx.get(f"{url}/openai/tools", timeout=5).json()]
    assert names == ["util-nap", "util-noisy"]


def _stderr(proc: subprocess.Popen[str]) -> str:
    """What a process that died wrote to its stderr pipe."""
    return proc.stderr.read() if proc.stderr else ""


def _signal_once_a_call_runs(proc: subprocess.Popen[str], url: str, sig: signal.Signals) -> None:
    """From a thread: send ``sig`` once the server reports a tool call in flight (its /metrics)."""

    def watch() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = httpx.get(f"{url}/metrics", timeout=2).text
            if "apcore_mcp_tool_calls_in_flight 1.0" in metrics:
                break
            time.sleep(0.02)
        proc.send_signal(sig)  # late at worst: the test then fails on the call, not silently

    threading.Thread(target=watch, daemon=True).start()


async def test_sigterm_lets_the_call_in_flight_finish(http_process: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = http_process
    async with Client(f"{url}/mcp", mode="legacy") as client:
        # The client validates structured output against the listed schema: list first, so
        # it needs no request after the server stops accepting connections.
        await client.list_tools()
        _signal_once_a_call_runs(proc, url, signal.SIGTERM)
        started = time.monotonic()
        result = await client.call_tool("util.nap", {"seconds": 1.5})
    assert result.is_error is False
    assert json.loads(text_of(result)) == {"slept": 1.5}
    proc.wait(8)
    assert proc.returncode == 0
    assert time.monotonic() - started < 5


async def test_plain_uvicorn_lets_the_call_in_flight_finish(extensions: Path) -> None:
    """``uvicorn app:create_app --factory`` (the container's command) drains calls too."""
    port = free_port()
    env = {**os.environ, "APCORE_MCP_EXTENSIONS_DIR": str(extensions)}
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app:create_app",
            "--factory",
            "--port",
            str(port),
            "--timeout-graceful-shutdown",
            "5",
            "--no-access-log",
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ok(f"{url}/health", proc, details=lambda: _stderr(proc))
            async with Client(f"{url}/mcp", mode="legacy") as client:
                await client.list_tools()
                _signal_once_a_call_runs(proc, url, signal.SIGTERM)
                result = await client.call_tool("util.nap", {"seconds": 1.5})
                answered = time.monotonic()
            assert json.loads(text_of(result)) == {"slept": 1.5}
            proc.wait(8)
            assert time.monotonic() - answered < 3  # open streams were ended, not left to time out
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


async def test_mcp_server_in_background_thread() -> None:
    server = BackgroundServer(make_executor(), transport="streamable-http", port=0, dynamic=True)
    server.start()
    try:
        assert server.running and server.port != 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.bridge is not None and server.bridge.settings.port == server.port  # not 1, not 0
        health = httpx.get(f"{server.url}/health", timeout=5).json()
        assert health["status"] == "ok" and health["module_count"] == len(EXPECTED_TOOLS)
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            result = await client.call_tool("demo.echo", {"text": "bg"})
        assert json.loads(text_of(result)) == {"echo": "bg"}
    finally:
        server.stop()
        server.wait(10)
    assert not server.running


async def test_sse_transport_warns_that_it_is_deprecated(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="apcore_mcp")
    server = BackgroundServer(make_executor(), transport="SSE", port=0)
    server.start()
    try:
        async with sse_client(f"{server.url}/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("demo.echo", {"text": "old"})
        assert json.loads(text_of(result)) == {"echo": "old"}
    finally:
        server.stop()
        server.wait(10)
    assert "SSE transport is deprecated; use streamable-http instead" in caplog.messages


def test_mcp_server_reports_a_busy_port() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        server = BackgroundServer(make_executor(), transport="streamable-http", port=busy.getsockname()[1])
        with pytest.raises(OSError):
            server.start()
        assert not server.running


def test_python_dash_m_and_console_script_agree() -> None:
    script = Path(sys.executable).with_name("apcore-mcp")
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0 and result.stdout == cli("--help").stdout
    assert os.access(script, os.X_OK)
