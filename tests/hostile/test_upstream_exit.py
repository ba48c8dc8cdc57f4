"""A failed stdio upstream says why: its command, its exit code and its last stderr lines, redacted and bounded.

Before, the log and ``/ready`` said only "Connection closed". A real failing command (a Python
one-liner that writes to stderr and exits 3) is mounted behind the CLI; its stderr holds a value
the config took from the environment (masked), a ``password=`` field (masked by the project's
redaction) and a 64 KB line (cut): what the log says stays a few hundred bytes. ``/ready`` is
open to anyone, so it says the exit code only and points to the log (its stderr may name paths,
hosts or users redaction does not know: tests/hostile/test_ready_disclosure.py). A call that
hits an upstream dying under it gets the full reason in its error (server side: the client is
told the code only, as for every module error).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from apcore import Context
from apcore.errors import ModuleError

from apcore_mcp.testing import apcore_server, start_server

from tests._support.upstreams import mounted, stdio_entry, upstream_children

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
CANARY = "canary-0a7e55-env-value"
FAILING = (
    "import os, sys\n"
    "print('x' * 65536, file=sys.stderr)\n"
    "print('starting with token ' + os.environ['UP_TOKEN'], file=sys.stderr)\n"
    "print('password=hunter2-never-shown', file=sys.stderr)\n"
    "print('fatal: no such database: orders', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert upstream_children() == {}


def failing_entry() -> dict[str, object]:
    return {"command": sys.executable, "args": ["-c", FAILING], "env": {"UP_TOKEN": "${UP_TOKEN}"}, "timeout": 10}


def assert_says_why(text: str) -> None:
    assert "exited with code 3" in text and "fatal: no such database: orders" in text, text
    assert "-c" in text and Path(sys.executable).name in text  # the command
    assert "starting with token ***" in text and "password=***" in text
    assert CANARY not in text and "hunter2" not in text
    assert "x" * 1000 not in text and len(text.encode()) < 2048


def test_ready_and_the_log_say_why_a_stdio_upstream_did_not_start(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"db": failing_entry(), "up": stdio_entry()}}))
    command = apcore_server(EXTENSIONS, "--mcp-config", str(config), "--log-level", "INFO", env={"UP_TOKEN": CANARY})
    server = start_server(command, "streamable-http", tmp_path)
    try:
        ready = httpx.get(f"{server.base_url}/ready", timeout=5).json()
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert ready["upstreams"]["failed"]["db"] == "upstream 'db' did not start: exited with code 3 (see the server log)"
    assert ready["upstreams"]["mounted"] == {"up": ready["upstreams"]["mounted"]["up"]}  # the other one is served
    [line] = [line for line in log.splitlines() if "Upstream server 'db' not mounted" in line]
    assert_says_why(line)
    assert CANARY not in log and "hunter2" not in log  # the upstream's own stderr is copied to the log redacted too


async def test_a_call_that_hits_a_dying_upstream_says_why(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with mounted({"mcpServers": {"up": stdio_entry()}}) as mount:
        with pytest.raises(ModuleError) as failed:
            await mount.executor.call_async("up.crash", {}, Context.create())
        status = mount.runtime.status()
    message = failed.value.message
    assert failed.value.code == "UPSTREAM_UNAVAILABLE"
    assert "closed the connection: command" in message and "exited with code 3" in message, message
    assert "simple-upstream pid=" in message  # its last stderr line
    assert status["pool"]["up"]["error"] == "exited with code 3 (see the server log)"  # what /ready shows
    assert any("exited with code 3" in record.getMessage() for record in caplog.records)
