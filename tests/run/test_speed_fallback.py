"""The Docker image's command, and the protocol name uvicorn users pass, run without the ``speed``
extra (httptools, uvloop).

docs/deploy.md and docs/replicas.md install ``apcore-mcp[redis]``. The image's CMD (``apcore-mcp``,
``http_parser`` ``auto``) then serves on h11 and its start log says so. The name
``apcore_mcp.run.protocol:TimedHttpToolsProtocol`` (``uvicorn --http``, docs/service.md) once failed
to import, and uvicorn never started: it falls back to the h11 protocol with one WARNING saying
what to install. The extra is hidden from each child process by a ``sitecustomize`` on its
``PYTHONPATH`` (this venv has it installed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from apcore_mcp.testing import free_port

from tests._support.deploy import STARTUP_SECONDS, image_command, image_env, log_tail, running
from tests._support.processes import wait_ok

HIDE_SPEED = '''
import sys

HIDDEN = {"httptools", "uvloop"}


class Hide:
    """Answers "not installed" for the speed extra's packages, as a venv without them would."""

    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        find = getattr(self.finder, "find_spec", None)
        return find(name, path, target) if find is not None else None

    def __getattr__(self, name):
        return getattr(self.finder, name)


sys.meta_path[:] = [Hide(finder) for finder in sys.meta_path]
'''


def hidden_speed(tmp_path: Path) -> dict[str, str]:
    """The image's environment, in which the speed extra is not installed."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_SPEED)
    return {**image_env(), "PYTHONPATH": str(shim)}


def test_the_image_command_starts_without_the_speed_extra(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    with running(image_command(port), log, env=hidden_speed(tmp_path)) as proc:
        health = wait_ok(f"http://127.0.0.1:{port}/health", proc, STARTUP_SECONDS, lambda: log_tail(log))
        assert health.json()["status"] == "ok"
    text = log.read_text()
    assert "HTTP on the h11 parser" in text, text
    assert "No module named 'httptools'" not in text


def test_the_httptools_protocol_name_is_h11_and_says_what_to_install(tmp_path: Path) -> None:
    code = "from apcore_mcp.run.protocol import TimedH11Protocol, TimedHttpToolsProtocol as P; print(P is TimedH11Protocol)"
    found = subprocess.run(
        [sys.executable, "-c", code], env=hidden_speed(tmp_path), capture_output=True, text=True, timeout=30
    )
    assert found.stdout.strip() == "True", found.stderr
    warnings = [line for line in found.stderr.splitlines() if "httptools is not installed" in line]
    assert len(warnings) == 1, found.stderr
    assert "pip install 'apcore-mcp[speed]'" in warnings[0]
