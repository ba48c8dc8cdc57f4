"""The pytest plugin of apcore_mcp.testing, run by pytest's own ``pytester``.

Passing and failing YAML cases and fixture tests, readiness failures (with the server's
output), a bad YAML file, server scopes, and teardown after a failure and after Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apcore_mcp.testing import is_running

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
EXTENSIONS = REPO / "examples" / "extensions"
SCRIPT = REPO / "tests" / "scripts" / "weather.yaml"
BROKEN = REPO / "tests" / "servers" / "broken_server.py"


@pytest.fixture(autouse=True)
def quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


CASES = f"""
server:
  extensions_dir: {EXTENSIONS}
transports: [streamable-http]
eras: [legacy]
cases:
  - id: counts words
    tool: text.stats
    arguments: {{text: "a b a"}}
    expect: {{structured: {{words: 3}}}}
  - id: wrong count
    tool: text.stats
    arguments: {{text: "a b a"}}
    expect: {{structured: {{words: 4, lines: 1}}}}
"""


def test_yaml_cases_pass_and_fail_with_a_diff(pytester: pytest.Pytester) -> None:
    pytester.makefile(".mcp.yaml", stats=CASES)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*stats.mcp.yaml: case 'wrong count': text.stats(text='a b a') on streamable-http",
            "*structured content does not contain the expected values:",
            '*-  "words": 4',
            '*+  "words": 3',
        ]
    )


def test_each_case_and_transport_is_an_item_with_a_readable_id(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".mcp.yaml", stats=CASES.replace("[streamable-http]", "[stdio, sse]").replace("[legacy]", "[legacy, modern]")
    )
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "stats.mcp.yaml::counts words[[]stdio[]]",
            "stats.mcp.yaml::counts words[[]stdio-modern[]]",
            "stats.mcp.yaml::counts words[[]sse[]]",
            "stats.mcp.yaml::wrong count[[]stdio[]]",
            "*6 tests collected*",
        ]
    )


def test_a_bad_yaml_file_is_one_collection_error_naming_file_and_field(pytester: pytest.Pytester) -> None:
    pytester.makefile(".mcp.yaml", bad=CASES.replace("expect: {structured: {words: 3}}", "expect: {txt: hi}"))
    pytester.makefile(".mcp.yaml", worse="server: {url: x}\ncases: [{tool: t, expect: {text_regex: '('}}]\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*bad.mcp.yaml: cases[[]0[]].expect.txt: unknown field (expected one of: *"])
    result.stdout.fnmatch_lines(["*worse.mcp.yaml: cases[[]0[]].expect.text_regex: invalid regular expression*"])
    assert "Traceback" not in result.stdout.str()


FIXTURE_TESTS = f"""
import anyio
from apcore_mcp.testing import scripted_server

SCRIPT = {str(SCRIPT)!r}

def test_forecast(mcp_server):
    server = mcp_server(scripted_server(SCRIPT), "streamable-http")
    assert server.params == {{"url": server.url}}
    assert server.mcp_servers_entry("weather") == {{"mcpServers": {{"weather": {{"type": "http", "url": server.url}}}}}}

    async def call():
        async with server.client() as client:
            return await client.call_tool("forecast", {{"city": "Oslo"}})

    assert anyio.run(call).structured_content == {{"sky": "sunny", "temp_c": 21}}
    assert [e["params"]["arguments"] for e in server.requests("tools/call")] == [{{"city": "Oslo"}}]

def test_wrong_expectation(mcp_server):
    server = mcp_server(SCRIPT, "sse")

    async def call():
        async with server.client() as client:
            return await client.call_tool("forecast", {{"city": "Oslo"}})

    assert anyio.run(call).content[0].text == "cloudy"
"""


def test_fixture_tests_pass_and_fail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_weather=FIXTURE_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: assert 'sunny' == 'cloudy'*"])


def test_readiness_failure_carries_the_server_output(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nmcp_ready_timeout = 3\n")
    pytester.makepyfile(
        test_broken=f"""
import sys
from apcore_mcp.testing import command_server

def test_exits(mcp_server):
    mcp_server(command_server([sys.executable, {str(BROKEN)!r}, "exit", "marker-one"]), "streamable-http")

def test_hangs(mcp_server):
    mcp_server(command_server([sys.executable, {str(BROKEN)!r}, "hang", "marker-two"], health_path="/health"), "sse")

def test_hangs_on_stdio(mcp_server):
    mcp_server(command_server([sys.executable, {str(BROKEN)!r}, "hang", "marker-three"]), "stdio")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=0, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*ServerNotReady: MCP server on streamable-http (http://127.0.0.1:*/mcp) exited with code 3 before it was ready",
            "*marker-one: cannot open the database*",
        ]
    )
    result.stdout.fnmatch_lines(["*did not answer GET /health within 3s*", "*marker-two: starting up*"])
    result.stdout.fnmatch_lines(["*did not complete the stdio handshake within 3s*", "*marker-three: starting up*"])


SCOPE_TESTS = """
from pathlib import Path
from apcore_mcp.testing import scripted_server

def record(name, server):
    with open(Path(__file__).parent / "pids.txt", "a") as out:
        out.write(f"{{name}} {{server.pid}}\\n")

def test_one(mcp_server):
    record("module", mcp_server(scripted_server({script!r}), "streamable-http", scope="module"))
    record("session", mcp_server(scripted_server({script!r}), "streamable-http", scope="session"))
    record("function", mcp_server(scripted_server({script!r}), "streamable-http"))

def test_two(mcp_server):
    record("module", mcp_server(scripted_server({script!r}), "streamable-http", scope="module"))
    record("session", mcp_server(scripted_server({script!r}), "streamable-http", scope="session"))
    record("function", mcp_server(scripted_server({script!r}), "streamable-http"))
    assert {fail}
"""


def test_scopes_share_servers_and_every_one_is_stopped_even_after_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=SCOPE_TESTS.format(script=str(SCRIPT), fail="True"),
        test_b=SCOPE_TESTS.format(script=str(SCRIPT), fail="False, 'fails on purpose'"),
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    seen: dict[str, list[int]] = {}
    for line in (pytester.path / "pids.txt").read_text().splitlines():
        name, pid = line.split()
        seen.setdefault(name, []).append(int(pid))
    assert len(set(seen["function"])) == 4  # a new server for each test
    assert len(set(seen["module"])) == 2  # one per module
    assert len(set(seen["session"])) == 1  # one for the whole run
    leftovers = [pid for pids in seen.values() for pid in pids if is_running(pid)]
    assert leftovers == []


INTERRUPTED = """
import time
from pathlib import Path
from apcore_mcp.testing import scripted_server

def test_waits(mcp_server):
    servers = [mcp_server(scripted_server({script!r}), "streamable-http", scope=scope) for scope in ("function", "module", "session")]
    pids = [server.pid for server in servers]
    Path({pid_file!r}).write_text(" ".join(map(str, pids)))
    for _ in range(600):  # bounded: the outer test interrupts long before
        time.sleep(0.1)
"""


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_servers_are_stopped_when_the_run_is_interrupted(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids.txt"
    test_file = pytester.makepyfile(test_interrupted=INTERRUPTED.format(script=str(SCRIPT), pid_file=str(pid_file)))
    runner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(test_file)],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # A run interrupted by Ctrl-C, whatever this worker's SIGINT disposition: an ignored or
        # blocked SIGINT is inherited across exec, and the run would never see the KeyboardInterrupt.
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while not pids_in(pid_file) and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.1)
        servers = pids_in(pid_file)
        assert len(servers) == 3, runner.communicate(timeout=30)[0].decode()
        assert all(is_running(pid) for pid in servers)
        runner.send_signal(signal.SIGINT)
        try:
            output = runner.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            pytest.fail("the interrupted run did not end within 60 s:\n" + runner.communicate()[0].decode())
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    assert "KeyboardInterrupt" in output, output
    assert [pid for pid in servers if is_running(pid)] == [], output
