"""Tasks checked by a client we did not write: the official TypeScript SDK's experimental tasks
(2025-11-25: ``execution.taskSupport``, a task-augmented ``tools/call``, ``tasks/get`` polling,
``tasks/result``, ``tasks/cancel``), through ``tests/_support/ts-tasks.mjs`` against our CLI."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.node import ensure_sdk

pytestmark = pytest.mark.interop

EXTENSIONS = Path(__file__).resolve().parents[1] / "task_extensions"
SCRIPT = Path(__file__).resolve().parents[1] / "_support" / "ts-tasks.mjs"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = start_server(apcore_server(EXTENSIONS), "streamable-http", tmp_path_factory.mktemp("ts-tasks"))
    try:
        yield running
    finally:
        running.stop()


def test_the_typescript_sdk_runs_and_cancels_a_task(server: RunningServer) -> None:
    deps = ensure_sdk()
    arguments = json.dumps({"steps": 3, "delay": 0.05})
    env = {**os.environ, "MCP_CLIENT_DEPS": str(deps)}
    done = subprocess.run(
        ["node", str(SCRIPT), server.url or "", "jobs.long", arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    report = json.loads(done.stdout or "{}")
    assert done.returncode == 0, (report, done.stderr)
    assert report["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    assert report["taskSupport"]["jobs.long"] == "optional"
    kinds = [message["type"] for message in report["stream"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result" and "taskStatus" in kinds, report
    assert report["stream"][-2]["status"] == "completed", report
    assert report["result"]["structuredContent"]["done"] == 3, report
    assert report["cancelled"]["status"] == "cancelled", report
    assert report["after"]["status"] == "cancelled", report
