"""The multi-worker commands users already type, as docs/service.md writes them: uvicorn's
``--workers 2`` and gunicorn's ``--workers 2`` with uvicorn's worker class, serving the app factory.

Neither tells the app it runs twice; the app finds out (``_hosts.py``) and behaves as under
``apcore-mcp --workers 2``: 2025-11-25 clients served stateless whatever worker they reach, one
sealing key and one record of used approvals for both workers. Each command runs in a process
group of its own on a free port, stopped by its PID.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from apcore_mcp.testing import free_port
from apcore_mcp.testing.harness import stop_process_group

from tests._support.deploy import REPO, clean_env
from tests._support.processes import wait_ok
from tests._support.replicas import EXTENSIONS, modern_call, structured
from tests._support.services import documented_command
from tests._support.workers import approved_retry, pids_answering, ran

STARTUP_SECONDS = 40


def command(needle: str, port: int) -> tuple[list[str], dict[str, str]]:
    variables, argv = documented_command(needle, workers=True)
    argv = [str(Path(sys.executable).parent / Path(argv[0]).name), *argv[1:]]  # this venv's
    for flag in ("--port", "--bind"):
        if flag in argv:
            at = argv.index(flag) + 1
            argv[at] = str(port) if flag == "--port" else f"127.0.0.1:{port}"
    return argv, {**clean_env(), "APCORE_MCP_EXTENSIONS_DIR": str(EXTENSIONS), **variables}


@contextlib.contextmanager
def documented(needle: str, log: Path) -> Iterator[str]:
    port = free_port()
    argv, env = command(needle, port)
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{base}/health", proc, STARTUP_SECONDS, lambda: log.read_text(errors="replace"))
        yield base
    finally:
        stop_process_group(proc)


@pytest.mark.parametrize("needle", ["uvicorn app:create_app", "gunicorn"])
async def test_the_documented_command_serves_every_feature_across_its_workers(needle: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with documented(needle, log) as base:

        def echo() -> str:
            answer = modern_call(base, "replica.echo", {"text": "x"})
            return str(answer["result"]["structuredContent"]["replica"])

        assert len(pids_answering(echo)) == 2, log.read_text()
        with anyio.fail_after(60):
            for index in range(6):
                async with Client(f"{base}/mcp", mode="legacy", cache=None) as client:
                    answer = structured(await client.call_tool("replica.echo", {"text": f"h{index}"}))
                    assert answer["text"] == f"h{index}"
        retry = approved_retry(base, "t")
        retries = [retry() for _ in range(6)]
    assert len(ran(retries)) == 1, retries  # sealed by one worker, opened by both, approved once
    output = log.read_text()
    assert output.count("workers serve this port") == 1, output
