"""docs/writing-modules.md runs as written: its ``# file:`` blocks are an extensions directory served
by the real CLI, its ``# client`` blocks call it with the MCP Python SDK, its other Python blocks run
as scripts beside that directory, and its WARNING and strict-mode lines are what the server prints.
"""

from __future__ import annotations

import linecache
import re
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from apcore_mcp.testing import RunningServer, command_server, start_server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "writing-modules.md"
RUN_MARK = "<!-- run by tests/tools/test_writing_modules_doc.py -->"
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.DOTALL)
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    marker: str

    @property
    def first_line(self) -> str:
        return self.body.splitlines()[0] if self.body else ""


def blocks() -> list[Block]:
    return [Block(m["lang"], m["body"], m["before"].strip()) for m in FENCE.finditer(PAGE.read_text())]


def files() -> dict[str, str]:
    """``{path below the project: source}`` of every ``# file:`` block."""
    found = {}
    for block in blocks():
        if block.first_line.startswith("# file: "):
            found[block.first_line.removeprefix("# file: ").strip()] = block.body + "\n"
    return found


def python_blocks(kind: str) -> list[Block]:
    """``client`` blocks, or ``script`` blocks (Python that is neither a file nor a client)."""
    python = [block for block in blocks() if block.lang == "python" and not block.first_line.startswith("# file: ")]
    return [block for block in python if (block.first_line == "# client") == (kind == "client")]


def text_lines(prefix: str) -> list[str]:
    return [
        line
        for block in blocks()
        if block.lang == "text"
        for line in block.body.splitlines()
        if line.startswith(prefix)
    ]


def write_project(root: Path, only: Callable[[str], bool] = lambda path: True) -> Path:
    for relative, source in files().items():
        if only(relative):
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source)
    return root


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "apcore_mcp", "--extensions-dir", "extensions", *args]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("writing-modules"))


@pytest.fixture(scope="module")
def served(project: Path) -> Iterator[RunningServer]:
    # Run from the project so the log names files as the page does: extensions/...
    command = command_server(
        cli("--transport", "{transport}", "--host", "{host}", "--port", "{port}"), cwd=project, health_path="/health"
    )
    server = start_server(command, "streamable-http", project / "run")
    try:
        yield server
    finally:
        server.stop()


def test_every_block_is_marked_and_the_runnable_ones_are_run() -> None:
    found = blocks()
    assert len(found) > 20
    for block in found:
        assert block.marker == RUN_MARK or block.marker.startswith("<!-- not run: "), block.first_line
        runnable = block.lang == "python" or block.body.startswith(("WARNING ", "Error: "))
        assert (block.marker == RUN_MARK) == runnable, block.first_line
    assert all(path.startswith("extensions/") and path.endswith(".py") for path in files())


def compiled(block: Block, name: str) -> CodeType:
    """The block's code, its source known to ``linecache`` so a failing assert shows the page's line."""
    filename = f"<{PAGE.name}: {name}>"
    linecache.cache[filename] = (len(block.body), None, block.body.splitlines(keepends=True), filename)
    return compile(block.body, filename, "exec")


def client_checks() -> list[tuple[str, Callable[[str], Coroutine[Any, Any, None]]]]:
    checks = []
    for index, block in enumerate(python_blocks("client")):
        namespace: dict[str, Any] = {}
        exec(compiled(block, f"client block {index}"), namespace)
        checks += [(name, value) for name, value in namespace.items() if name.startswith("check_")]
    return checks


def test_there_is_a_client_check_for_every_served_example() -> None:
    names = [name for name, _ in client_checks()]
    assert len(names) == len(set(names))
    assert {
        "check_greet",
        "check_slow",
        "check_countdown",
        "check_wipe",
        "check_badge",
        "check_divide",
        "check_reading",
    } <= set(names)


@pytest.mark.parametrize("name", [name for name, _ in client_checks()])
async def test_client_block(served: RunningServer, name: str) -> None:
    check = dict(client_checks())[name]
    assert served.url is not None
    await check(served.url)


@pytest.mark.parametrize("index", range(len(python_blocks("script"))))
def test_script_block(project: Path, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)  # beside extensions/, as the page's reader would be
    block = python_blocks("script")[index]
    exec(compiled(block, f"script block {index}"), {"__name__": "__doc_block__"})


def test_the_warning_lines_are_what_the_server_logs(served: RunningServer) -> None:
    logged = {STAMP.sub("", line) for line in served.log_path.read_text().splitlines()}
    documented = text_lines("WARNING ")
    assert len(documented) == 5
    for line in documented:
        assert line in logged, f"not logged: {line}\nlogged:\n" + "\n".join(sorted(logged))


def test_the_strict_error_is_what_the_cli_prints(tmp_path: Path) -> None:
    [documented] = text_lines("Error: ")
    broken = re.findall(r"(extensions/broken/\w+\.py) \(module", documented)
    write_project(tmp_path, lambda path: not path.startswith("extensions/broken/") or path in broken)
    run = subprocess.run(
        cli("--strict-modules"), cwd=tmp_path, input="", capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 2, run
    assert documented in run.stderr.splitlines(), run.stderr
