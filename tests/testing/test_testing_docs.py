"""docs/testing.md (Testing with apcore-mcp) runs as written: every ``# file:`` block is written out and the page's
pytest command runs them, the documented scripted-server command is started, and examples/testing holds exactly the
page's ``tests/`` files, byte for byte (tests/project/test_installed.py runs the same page in a fresh virtual environment)."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import urllib.request
from pathlib import Path

import pytest

from apcore_mcp.testing import command_server, start_server

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "testing.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def doc_blocks() -> list[tuple[str, str, str]]:
    """``(language, first line, body)`` of every fenced block of the doc."""
    return [(lang, body.split("\n", 1)[0], body) for lang, body in BLOCK.findall(DOC.read_text())]


def file_blocks() -> dict[str, str]:
    """``{path: body}`` of the page's ``# file: <path>`` blocks (the body starts with that line)."""
    blocks = {
        first.removeprefix("# file: ").strip(): body for _, first, body in doc_blocks() if first.startswith("# file: ")
    }
    assert len(blocks) == sum(first.startswith("# file: ") for _, first, _ in doc_blocks()), "a path given twice"
    return blocks


def command_of(name: str) -> list[str]:
    """The words of the page's ``# run: <name>`` bash block (its one command line)."""
    bodies = [body for lang, first, body in doc_blocks() if lang == "bash" and first == f"# run: {name}"]
    assert len(bodies) == 1, f"docs/testing.md: expected one '# run: {name}' block, found {len(bodies)}"
    lines = [line for line in bodies[0].splitlines()[1:] if line.strip()]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def test_every_file_block_of_the_doc_runs(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "examples" / "extensions", pytester.path / "extensions")
    for name, body in file_blocks().items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    assert sorted(file_blocks()) == [
        "pyproject.toml",
        "tests/stats.mcp.yaml",
        "tests/test_stats_fixture.py",
        "tests/test_weather_client.py",
        "tests/weather.script.yaml",
    ]
    argv = command_of("the project's tests")
    assert argv[0] == "pytest"
    result = pytester.runpytest("-p", "no:cacheprovider", *argv[1:])
    # stats.mcp.yaml: 2 cases x 4 transport/era pairs (memory and HTTP, both eras); the fixture file: 6; the client file: 3
    result.assert_outcomes(passed=17)
    assert "warning" not in result.stdout.lines[-1], result.stdout.str()


def test_examples_testing_are_the_page_files_byte_for_byte() -> None:
    examples = REPO / "examples" / "testing"
    expected = {name.removeprefix("tests/"): body for name, body in file_blocks().items() if name.startswith("tests/")}
    present = sorted(path.name for path in examples.iterdir() if path.name != "__pycache__")
    assert present == sorted(expected), "examples/testing holds exactly the page's tests/ files"
    for name, body in expected.items():
        assert (examples / name).read_bytes() == body.encode(), f"examples/testing/{name} differs from docs/testing.md"


def test_the_documented_scripted_server_command_serves(pytester: pytest.Pytester) -> None:
    script = next(body for _, first, body in doc_blocks() if first == "# file: tests/weather.script.yaml")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "weather.script.yaml").write_text(script)
    argv = command_of("scripted-cli")
    assert argv[:3] == ["python", "-m", "apcore_mcp.testing.scripted"]
    argv[0], argv[argv.index("--port") + 1] = sys.executable, "{port}"
    server = start_server(
        command_server(argv, cwd=pytester.path, health_path="/health"), "streamable-http", pytester.path / "run"
    )
    try:
        with urllib.request.urlopen(f"{server.base_url}/health", timeout=10) as health:
            assert health.status == 200
        with urllib.request.urlopen(f"{server.base_url}/requests?method=tools/call", timeout=10) as record:
            assert record.read() == b"[]"
    finally:
        server.stop()
    assert (pytester.path / "requests.jsonl").exists()
