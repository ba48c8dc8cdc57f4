"""The start log counts the tools served once upstream servers are mounted, per source, in one line."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from apcore import Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.testing import apcore_server, start_server

from tests._support.named_upstream import named_entry
from tests._support.upstreams import stdio_entry

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
STARTED = re.compile(r"apcore-mcp server started, serving (\d+) tools over ([a-z-]+): (.*)$", re.MULTILINE)


@pytest.mark.parametrize("transport", ["streamable-http", "stdio"])
async def test_the_start_line_counts_upstream_tools_per_source(tmp_path: Path, transport: str) -> None:
    config = tmp_path / "mcp.json"
    servers = {"up": stdio_entry("--tools", "3"), "everything": named_entry("echo", "get-sum")}
    config.write_text(json.dumps({"mcpServers": servers}))
    command = apcore_server(EXTENSIONS, "--mcp-config", str(config), "--log-level", "INFO")
    server = start_server(command, transport, tmp_path)
    try:
        async with server.client(era="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
        log = server.log_path.read_text()
    finally:
        server.stop()
    by_source = Counter(name.split(".")[0] if name.split(".")[0] in servers else "local" for name in names)
    assert by_source["local"] and by_source["up"] and by_source["everything"] == 2
    started = STARTED.findall(log)
    assert started, log
    total, over, sources = started[-1]
    assert (int(total), over) == (len(names), transport)
    assert sources == f"{by_source['local']} local, 2 from upstream 'everything', {by_source['up']} from upstream 'up'"
    assert "tools registered" not in log  # the old line, counted before upstreams were mounted


@pytest.mark.parametrize("upstreams", [True, False])
def test_zero_local_tools_is_a_warning_only_without_upstreams(
    tmp_path: Path, upstreams: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Every tool may come from upstream servers, mounted after the bridge is built: no 'zero tools' then."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"up": stdio_entry("--tools", "1")}}))
    settings = Settings(mcp_config=str(config)) if upstreams else Settings()
    with caplog.at_level("WARNING", logger="apcore_mcp"):
        Bridge.build(Registry(), settings)
    warned = any("zero tools" in record.getMessage() for record in caplog.records)
    assert warned is not upstreams


FROZEN = re.compile(r"(\d+) start-up objects left out of the collector's passes")


@pytest.mark.parametrize("transport", ["streamable-http", "stdio"])
async def test_serving_freezes_what_start_up_built(tmp_path: Path, transport: str) -> None:
    """Once started, the collector's full passes skip start-up's objects (the p99 of a call was those passes)."""
    server = start_server(apcore_server(EXTENSIONS, "--log-level", "DEBUG"), transport, tmp_path)
    try:
        async with server.client(era="legacy") as client:
            assert (await client.list_tools()).tools
        log = server.log_path.read_text()
    finally:
        server.stop()
    frozen = FROZEN.findall(log)
    assert frozen and int(frozen[-1]) > 10_000, log[-2000:]


LISTENING = re.compile(r"Listening on http://127\.0\.0\.1:(\d+) ")


def test_port_zero_binds_a_free_port_and_the_log_and_settings_say_which(tmp_path: Path) -> None:
    """``--port 0``: the server binds a free port, logs it, answers there; the settings the app is
    built with carry it too, so the URLs it gives out (OAuth resource metadata) name it."""
    import socket
    import sys
    import time

    import httpx

    from apcore_mcp.calls.signin import public_base
    from apcore_mcp.run.serve import bound_settings
    from apcore_mcp.testing.harness import spawn, stop_process_group

    argv = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(EXTENSIONS)]
    argv += ["--transport", "streamable-http", "--port", "0", "--log-level", "INFO"]
    log = tmp_path / "server.log"
    process = spawn(argv, env={}, cwd=None, log=log)
    try:
        deadline = time.monotonic() + 30
        while not (found := LISTENING.search(log.read_text())) and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.05)
        assert found, log.read_text()
        port = int(found.group(1))
        assert port != 0
        health = None
        while health is None and time.monotonic() < deadline:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            except httpx.TransportError:
                time.sleep(0.05)
        assert health is not None and health.status_code == 200
    finally:
        stop_process_group(process)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        settings = bound_settings(Settings(port=0), sock)
        assert settings.port == sock.getsockname()[1] != 0
        assert public_base(settings) == f"http://127.0.0.1:{settings.port}"
