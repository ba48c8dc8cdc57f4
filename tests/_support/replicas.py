"""Replicas for the tests: our CLI serving ``tests/replica_extensions`` several times, nginx in
front (a ``deploy/`` configuration pointed at them), a real ``redis-server``; all on 127.0.0.1,
every process stopped by PID or process group.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from apcore_mcp.testing import RunningServer, apcore_server, free_port, start_server

from tests._support.deploy import DEPLOY, clean_env, log_tail, nginx_running, point_nginx_conf
from tests._support.processes import stop_process

EXTENSIONS = Path(__file__).resolve().parents[1] / "replica_extensions"
ROUND_ROBIN = DEPLOY / "nginx-replicas.conf"
AFFINITY = DEPLOY / "nginx-affinity.conf"
UPSTREAM_NAMES = ("apcore-mcp-1:8000", "apcore-mcp-2:8000")
MODERN = "2026-07-28"
CALL_SECONDS = 20.0


def new_key() -> str:
    return secrets.token_hex(32)


@dataclass
class Replica:
    name: str
    server: RunningServer

    @property
    def base(self) -> str:
        assert self.server.base_url is not None
        return self.server.base_url

    @property
    def address(self) -> str:
        return self.base.removeprefix("http://")

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self.server.process is not None
        return self.server.process

    def stop(self) -> None:
        self.server.stop()

    def output(self) -> str:
        return self.server.output()


def start_replica(name: str, workdir: Path, *args: str) -> Replica:
    """One replica: ``python -m apcore_mcp`` on a free port, ``REPLICA_NAME`` in its environment."""
    command = apcore_server(EXTENSIONS, *args, env={"REPLICA_NAME": name})
    return Replica(name, start_server(command, "streamable-http", workdir / name))


def start_replicas(names: Sequence[str], workdir: Path, *args: str) -> list[Replica]:
    """Several replicas with the same arguments, started side by side."""
    with ThreadPoolExecutor(len(names)) as pool:
        futures = [pool.submit(start_replica, name, workdir, *args) for name in names]
        started = []
        try:
            for future in futures:
                started.append(future.result())
        except BaseException:
            for replica in started:
                replica.stop()
            raise
    return started


@contextlib.contextmanager
def replicas_running(names: Sequence[str], workdir: Path, *args: str) -> Iterator[list[Replica]]:
    replicas = start_replicas(names, workdir, *args)
    try:
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()


@dataclass
class Proxy:
    url: str
    log: Path

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"

    def entries(self) -> list[dict[str, str]]:
        """nginx's access log lines (the ``mcp`` format of deploy/) as dicts."""
        return [parse_access_line(line) for line in self.log.read_text().splitlines() if "upstream=" in line]


ACCESS_FIELD = re.compile(r'(\w+)=("([^"]*)"|(\S*))')


def parse_access_line(line: str) -> dict[str, str]:
    fields = {
        match.group(1): match.group(3) if match.group(3) is not None else match.group(4)
        for match in ACCESS_FIELD.finditer(line)
    }
    request = re.search(r'"(\w+) (\S+) HTTP', line)
    status = re.search(r'" (\d{3}) ', line)
    fields["request"] = f"{request.group(1)} {request.group(2)}" if request else ""
    fields["status"] = status.group(1) if status else ""
    return fields


@contextlib.contextmanager
def proxy_running(template: Path, replicas: Sequence[Replica], workdir: Path) -> Iterator[Proxy]:
    """nginx serving ``template`` with its upstream servers pointed at ``replicas`` (one or two)."""
    assert 1 <= len(replicas) <= len(UPSTREAM_NAMES)
    addresses = [replica.address for replica in replicas] + [""] * (len(UPSTREAM_NAMES) - len(replicas))
    port = free_port()
    conf = point_nginx_conf(template.read_text(), port, dict(zip(UPSTREAM_NAMES, addresses, strict=True)))
    workdir.mkdir(parents=True, exist_ok=True)
    with nginx_running(conf, workdir, port):
        yield Proxy(f"http://127.0.0.1:{port}", workdir / "nginx.log")


# -- redis ------------------------------------------------------------------------------------


def redis_binary() -> str:
    path = shutil.which("redis-server")
    if path is None:
        pytest.fail("redis-server is not installed: apt-get install -y redis-server (scripts/test.sh installs it)")
    return path


@dataclass
class RedisServer:
    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or start again, on the same port) and wait until it answers PING."""
        cmd = [
            redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(self.workdir), "--protected-mode", "yes",
        ]  # fmt: skip
        log = (self.workdir / "redis.log").open("ab")
        self.process = subprocess.Popen(cmd, cwd=self.workdir, env=clean_env(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(
                    f"redis-server exited with {self.process.returncode}:\n{log_tail(self.workdir / 'redis.log')}"
                )
            if self.ping():
                return
            time.sleep(0.05)
        pytest.fail(f"redis-server did not answer PING within 10 s:\n{log_tail(self.workdir / 'redis.log')}")

    def ping(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None


@contextlib.contextmanager
def redis_running(workdir: Path) -> Iterator[RedisServer]:
    workdir.mkdir(parents=True, exist_ok=True)
    server = RedisServer(free_port(), workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- the 2026-07-28 wire, by hand (for requests aimed at one replica) -------------------------


def modern_call(
    base: str,
    name: str,
    arguments: dict[str, Any],
    *,
    request_state: str | None = None,
    input_responses: dict[str, Any] | None = None,
    elicitation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One 2026-07-28 ``tools/call`` to ``base``; the JSON-RPC response (``result`` or ``error``).

    ``elicitation``: the client's elicitation capability (default: form mode only)."""
    params: dict[str, Any] = {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": elicitation or {"form": {}}},
        },
    }
    if request_state is not None:
        params["requestState"] = request_state
    if input_responses is not None:
        params["inputResponses"] = input_responses
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=CALL_SECONDS)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        return next(message for message in messages if message.get("id") == 1)
    return dict(response.json())


def structured(result: Any) -> dict[str, Any]:
    """The structured content of an SDK ``CallToolResult`` that must not be an error."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def ready(base: str) -> httpx.Response:
    return httpx.get(f"{base}/ready", timeout=5)


async def eventually(check: Any, timeout: float, what: str) -> Any:
    """``wait_until`` for async code: await ``check()`` until it returns something true (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await anyio.sleep(0.02)
    pytest.fail(f"{what} not within {timeout}s")


def wait_until(check: Any, timeout: float, what: str, details: Any = lambda: "") -> Any:
    """Poll ``check()`` until it returns something true (bounded); its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"{what} not within {timeout}s\n{details()}")
