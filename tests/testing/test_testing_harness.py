"""apcore_mcp.testing.harness without pytest's fixture: readiness of a foreign server by a
handshake, connection parameters of each transport, stopping a whole process group, and the
errors for what cannot be served; a YAML case file against a server someone else runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from apcore_mcp.testing import command_server, encode_responses, is_running, scripted_server, start_server
from apcore_mcp.testing.clients import connect
from apcore_mcp.testing.shared_servers import ServerPool

from tests._support.results import text_of

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]
SCRIPT = TESTS / "scripts" / "weather.yaml"
SCRIPTED = [sys.executable, "-m", "apcore_mcp.testing.scripted", str(SCRIPT)]
PORT_ARGS = ["--transport", "{transport}", "--port", "{port}"]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_server_without_health_is_ready_after_a_handshake(tmp_path: Path, transport: str) -> None:
    server = start_server(command_server([*SCRIPTED, *PORT_ARGS]), transport, tmp_path)
    try:
        assert server.pid is not None
        assert is_running(server.pid)
        async with server.client() as client:
            assert (await client.call_tool("forecast", {"city": "Kyiv"})).structured_content == {
                "sky": "sunny",
                "temp_c": 21,
            }
    finally:
        server.stop()
    assert not is_running(server.pid)


def test_stdio_parameters_and_mcp_servers_entry(tmp_path: Path) -> None:
    command = command_server([*SCRIPTED, *PORT_ARGS], env={"WEATHER_MODE": "test"}, cwd=tmp_path)
    server = start_server(command, "stdio", tmp_path / "run")
    assert server.pid is None  # a stdio client starts its own process: the probe's is gone
    params = server.params
    assert params["command"] == sys.executable
    assert params["args"][:3] == ["-m", "apcore_mcp.testing.scripted", str(SCRIPT)]
    assert params["args"][3:5] == ["--transport", "stdio"]
    assert (params["env"], params["cwd"]) == ({"WEATHER_MODE": "test"}, str(tmp_path))
    assert server.mcp_servers_entry("w") == {"mcpServers": {"w": {"type": "stdio", **params}}}
    sse = start_server(scripted_server(SCRIPT), "sse", tmp_path / "sse")
    try:
        assert sse.mcp_servers_entry("w") == {"mcpServers": {"w": {"type": "sse", "url": sse.url}}}
        assert sse.url is not None
        assert sse.url.endswith("/sse")
    finally:
        sse.stop()


def test_stopping_reaches_every_process_of_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "helper.pid"
    forking = [sys.executable, str(TESTS / "servers" / "forking_server.py"), str(pid_file), str(SCRIPT), *PORT_ARGS]
    server = start_server(command_server(forking, health_path="/health"), "streamable-http", tmp_path / "run")
    helper = int(pid_file.read_text())
    assert is_running(helper)
    server.stop()
    assert server.pid is not None
    assert not is_running(server.pid)
    assert not is_running(helper)
    server.stop()  # idempotent


def test_what_cannot_be_served_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Unknown transport 'websocket'"):
        start_server(scripted_server(SCRIPT), "websocket", tmp_path)
    with pytest.raises(ValueError, match="no 2026-07-28 era"):
        connect("sse", "http://127.0.0.1:1/sse", {}, era="modern")
    with pytest.raises(ValueError, match="Unknown era 'future'"):
        connect("streamable-http", "http://127.0.0.1:1/mcp", {}, era="future")


def test_yaml_cases_against_a_server_someone_else_runs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    server = start_server(scripted_server(SCRIPT), "streamable-http", tmp_path)
    try:
        pytester.makefile(
            ".mcp.yaml",
            remote=f"server: {{url: '{server.url}'}}\n"
            "eras: [legacy]\n"
            "cases:\n"
            "  - {tool: forecast, arguments: {city: A}, expect: {text: sunny}}\n",
        )
        pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        result = pytester.runpytest("-p", "no:cacheprovider", "-v")
        result.stdout.fnmatch_lines(["*remote.mcp.yaml::forecast #1[[]streamable-http[]] PASSED*"])
        result.assert_outcomes(passed=1)
        assert [c["params"]["arguments"] for c in server.requests("tools/call")] == [{"city": "A"}]
    finally:
        server.stop()


async def test_the_directive_tool_is_named_on_the_command_line(tmp_path: Path) -> None:
    server = start_server(scripted_server(SCRIPT, "--directive-tool", "fetch_rows"), "streamable-http", tmp_path)
    turns = [{"content": [{"type": "text", "text": "7 rows"}]}]
    try:
        async with server.client() as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            text = f"[mcp_responses_json={encode_responses(turns)}]"
            result = await client.call_tool("fetch_rows", {"task_description": text})
    finally:
        server.stop()
    assert names[-1] == "fetch_rows"
    assert "get_data" not in names
    assert text_of(result) == "7 rows"


def test_a_shared_server_that_died_is_started_again(tmp_path: Path) -> None:
    pool = ServerPool(tmp_path)
    try:
        first = pool.get(scripted_server(SCRIPT), "sse")
        assert pool.get(scripted_server(SCRIPT), "sse") is first
        first.stop()
        second = pool.get(scripted_server(SCRIPT), "sse")
        assert second.pid != first.pid
        assert second.pid is not None
        assert is_running(second.pid)
    finally:
        pool.close()
    assert not is_running(second.pid)
