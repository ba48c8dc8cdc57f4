"""docs/testing.md (Testing with apcore-mcp) and examples/testing run as written: every ``# file:`` block is written out and
run by pytest, the documented scripted-server command is started, and examples/testing passes."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from apcore_mcp.testing import command_server, start_server

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "testing.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def doc_blocks() -> list[tuple[str, str, str]]:
    """``(language, first line, body)`` of every fenced block of the doc."""
    return [(lang, body.split("\n", 1)[0], body) for lang, body in BLOCK.findall(DOC.read_text())]


def test_every_file_block_of_the_doc_runs(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "examples" / "extensions", pytester.path / "extensions")
    written = []
    for _, first, body in doc_blocks():
        if first.startswith("# file: "):
            path = pytester.path / first.removeprefix("# file: ").strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
            written.append(path.name)
    assert sorted(written) == [
        "stats.mcp.yaml",
        "test_stats_fixture.py",
        "test_weather_client.py",
        "weather.script.yaml",
    ]
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "tests")
    # stats.mcp.yaml: 2 cases x 5 transport/era pairs; the fixture file: 4; the client file: 3
    result.assert_outcomes(passed=17)


def test_the_documented_scripted_server_command_serves(pytester: pytest.Pytester) -> None:
    script = next(body for _, first, body in doc_blocks() if first == "# file: tests/weather.script.yaml")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "weather.script.yaml").write_text(script)
    command = next(body for lang, first, body in doc_blocks() if lang == "bash" and first == "# run: scripted-cli")
    argv = shlex.split(command.splitlines()[1])
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


def test_examples_testing_pass_as_a_user_runs_them() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples/testing"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # stats.mcp.yaml: 3 cases x 5 transport/era pairs; test_weather_client.py: 3 + 1
    assert done.stdout.strip().splitlines()[-1].startswith("24 passed"), done.stdout
