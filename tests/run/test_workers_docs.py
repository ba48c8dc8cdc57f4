"""docs/workers.md's command, run as written (on a free port): two workers serve the examples,
and SIGTERM stops the supervisor and both workers."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

from apcore_mcp.testing import free_port
from apcore_mcp.testing.harness import stop_process_group

from tests._support.deploy import REPO, clean_env
from tests._support.doc_blocks import blocks_of
from tests._support.processes import wait_ok
from tests._support.replicas import modern_call

PAGE = REPO / "docs" / "workers.md"


def documented_argv() -> list[str]:
    (line,) = [block.body.strip() for block in blocks_of(PAGE) if block.lang == "bash"]
    argv = shlex.split(line)
    return [str(Path(sys.executable).parent / Path(argv[0]).name), *argv[1:]]


def test_the_page_command_runs_two_workers_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    argv = [*documented_argv(), "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            argv, cwd=REPO, env=clean_env(), stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{base}/health", proc, 40, lambda: log.read_text(errors="replace"))
        answer = modern_call(base, "text.stats", {"text": "two words"})
        assert answer["result"]["structuredContent"]["words"] == 2, answer
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, log.read_text()
    finally:
        stop_process_group(proc)
    output = log.read_text()
    assert output.count("Started server process") == 2, output  # uvicorn's line, once per worker
    assert "with 2 workers" in output
