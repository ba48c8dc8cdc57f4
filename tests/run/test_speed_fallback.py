"""The Docker image's command runs on an install without the ``speed`` extra (httptools, uvloop).

docs/deploy.md and docs/replicas.md install ``apcore-mcp[redis]``; the image's CMD names
``--http apcore_mcp.run.protocol:TimedHttpToolsProtocol``, and without httptools
uvicorn failed to import it and never started. Now the name falls back to the h11 protocol
with one WARNING saying what to install. The extra is hidden from the child process by a
``sitecustomize`` on its ``PYTHONPATH`` (this venv has it installed).
"""

from __future__ import annotations

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


def test_the_image_command_starts_without_the_speed_extra(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_SPEED)
    port = free_port()
    log = tmp_path / "uvicorn.log"
    env = {**image_env(), "PYTHONPATH": str(shim)}
    with running(image_command(port), log, env=env) as proc:
        health = wait_ok(f"http://127.0.0.1:{port}/health", proc, STARTUP_SECONDS, lambda: log_tail(log))
        assert health.json()["status"] == "ok"
    text = log.read_text()
    warnings = [line for line in text.splitlines() if "httptools is not installed" in line]
    assert len(warnings) == 1, text
    assert "pip install 'apcore-mcp[speed]'" in warnings[0]
    assert "No module named 'httptools'" not in text
