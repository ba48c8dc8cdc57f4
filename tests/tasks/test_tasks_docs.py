"""The runnable blocks of docs/tasks.md, run as written: the module file into ``./extensions``, the
command line with only its port changed to a free one on 127.0.0.1, and the Python client against it."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

from apcore_mcp.testing import free_port

from tests._support.processes import stop_process, wait_ok

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "tasks.md"
MARK = "<!-- run by: tests/tasks/test_tasks_docs.py -->"
DOCUMENTED_PORT = "8000"


def blocks(lang: str) -> list[str]:
    return [str(b) for b in re.findall(rf"{re.escape(MARK)}\n```{lang}\n(.*?)```", PAGE.read_text(), re.DOTALL)]


def test_the_module_the_command_and_the_client_work_as_written(tmp_path: Path) -> None:
    module, client = blocks("python")
    (command,) = blocks("bash")
    first_line = module.splitlines()[0]
    assert first_line.startswith("# extensions/reports/build.py")
    target = tmp_path / first_line.split()[1].rstrip(":")
    target.parent.mkdir(parents=True)
    target.write_text(module)
    argv = shlex.split(command.strip())
    assert argv[0] == "apcore-mcp" and argv[argv.index("--port") + 1] == DOCUMENTED_PORT
    port = str(free_port())
    argv = [str(Path(sys.executable).parent / argv[0]), *(port if a == DOCUMENTED_PORT else a for a in argv[1:])]
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([*argv, "--host", "127.0.0.1"], cwd=tmp_path, stdout=sink, stderr=sink)
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc, details=lambda: log.read_text(errors="replace"))
        script = client.replace(f"127.0.0.1:{DOCUMENTED_PORT}", f"127.0.0.1:{port}")
        ran = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False
        )
    finally:
        stop_process(proc)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert any(line.startswith("working: ") for line in lines), ran.stdout  # polled while it ran
    assert "completed: 3/3: page 3" in lines, ran.stdout
    assert ast.literal_eval(lines[-1]) == {"pages": 3, "url": "https://reports.example/monthly"}
