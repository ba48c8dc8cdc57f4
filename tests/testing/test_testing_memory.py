"""The test kit's ``memory`` transport: our servers in the test's own process, reached by the real
SDK client over its in-memory streams, in both protocol eras, with every feature a call can use
(progress, elicitation, approval, tasks, list changes, cancellation), the CLI's arguments, the
server's log records, and clear refusals for what cannot run in process."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from apcore_mcp.testing import ServerNotReady, apcore_server, command_server, scripted_server, start_server
from apcore_mcp.testing.plugin import McpServerFactory
from apcore_mcp.testing.shared_servers import ServerPool

from tests._support.replicas import structured
from tests._support.span_tree import approve
from tests._support.tasks import TasksClient

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]
REPLICA_EXTENSIONS = TESTS / "replica_extensions"
TASK_EXTENSIONS = TESTS / "task_extensions"
SCRIPT = TESTS / "scripts" / "weather.yaml"
ERAS = ["legacy", "modern"]
CALL_SECONDS = 10


async def decline(_context: object, _params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def notifications(received: list[str]) -> Any:
    async def handler(message: Any) -> None:
        if isinstance(method := getattr(message, "method", None), str):
            received.append(method)

    return handler


@pytest.mark.parametrize("era", ERAS)
async def test_an_extensions_directory_is_served_in_this_process(mcp_server: McpServerFactory, era: str) -> None:
    server = mcp_server(REPLICA_EXTENSIONS)  # the default transport: memory
    assert (server.transport, server.pid, server.url, server.base_url) == ("memory", None, None, None)
    with anyio.fail_after(CALL_SECONDS):
        async with server.client(era=era) as client:
            assert isinstance(client, Client)
            names = {tool.name for tool in (await client.list_tools()).tools}
            echoed = structured(await client.call_tool("replica.echo", {"text": "hi"}))
            modern = client.protocol_version == "2026-07-28"
    assert {"replica.add", "replica.ask", "replica.purge"} <= names
    assert echoed == {"text": "hi", "replica": str(os.getpid())}  # run by this very process
    assert modern is (era == "modern")
    with pytest.raises(ValueError, match="no connection parameters"):
        server.mcp_servers_entry("replicas")


async def test_the_cli_arguments_and_settings_variables_apply(mcp_server: McpServerFactory) -> None:
    tagged = mcp_server(apcore_server(REPLICA_EXTENSIONS, env={"APCORE_MCP_TAGS": "nothing-has-this"}))
    prefixed = mcp_server(apcore_server(REPLICA_EXTENSIONS, "--prefix", "replica.e"))
    async with tagged.client() as client:
        assert (await client.list_tools()).tools == []
    async with prefixed.client() as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["replica.echo"]


def test_what_cannot_run_in_memory_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="for any other command use 'stdio' or 'streamable-http'"):
        start_server(command_server(["my-server", "--port", "{port}"]), "memory", tmp_path)
    with pytest.raises(ValueError, match=r"its own environment \(HOME\).*monkeypatch"):
        start_server(apcore_server(REPLICA_EXTENSIONS, env={"HOME": "/elsewhere"}), "memory", tmp_path)
    with pytest.raises(ServerNotReady, match="unrecognized arguments: --no-such-flag"):
        start_server(apcore_server(REPLICA_EXTENSIONS, "--no-such-flag"), "memory", tmp_path)
    with pytest.raises(ServerNotReady, match="extensions directory does not exist"):
        start_server(apcore_server(tmp_path / "missing"), "memory", tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("tools: [{name: t, responses: nope}]\n")
    with pytest.raises(ServerNotReady, match="bad.yaml"):
        start_server(scripted_server(bad), "memory", tmp_path)


@pytest.mark.parametrize("era", ERAS)
async def test_progress(mcp_server: McpServerFactory, era: str) -> None:
    server = mcp_server(TASK_EXTENSIONS, scope="module")
    progress: list[float] = []

    async def on_progress(value: float, _total: float | None, _message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(CALL_SECONDS):
        async with server.client(era=era) as client:
            result = await client.call_tool("jobs.long", {"steps": 3, "delay": 0}, progress_callback=on_progress)
    assert progress == [1, 2, 3]
    assert structured(result)["done"] == 3


async def test_a_task_runs_to_its_result(mcp_server: McpServerFactory) -> None:
    # The SDK client reaches tasks in 2026-07-28 only, through an extension (tests/_support/tasks.py).
    server = mcp_server(TASK_EXTENSIONS, scope="module")
    tasks = TasksClient()
    with anyio.fail_after(CALL_SECONDS):
        async with server.client(era="modern", extensions=[tasks]) as client:
            result = await client.call_tool("jobs.long", {"steps": 3, "delay": 0.01})
    assert structured(result)["done"] == 3
    assert [created["status"] for created in tasks.created] == ["working"]
    assert tasks.polled[-1]["status"] == "completed"


@pytest.mark.parametrize("era", ERAS)
async def test_elicitation_answers_and_approval(mcp_server: McpServerFactory, era: str) -> None:
    server = mcp_server(REPLICA_EXTENSIONS, scope="module")

    async def answer(_context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        if "replica.purge" in params.message:
            return await approve(_context, params)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    with anyio.fail_after(CALL_SECONDS):
        async with server.client(era=era, elicitation_callback=answer) as client:
            asked = structured(await client.call_tool("replica.ask", {"question": "colour?"}))
            purged = structured(await client.call_tool("replica.purge", {"target": "logs"}))
        async with server.client(era=era, elicitation_callback=decline) as client:
            refused = await client.call_tool("replica.purge", {"target": "logs"})
    assert asked == {"asked": True, "answer": "blue"}
    assert purged["purged"] == "logs"
    assert refused.is_error


async def test_a_cancelled_call_cancels_the_module(mcp_server: McpServerFactory, tmp_path: Path) -> None:
    server = mcp_server(TASK_EXTENSIONS)
    marker = tmp_path / "job"
    running = asyncio.Event()

    async def on_progress(_value: float, _total: float | None, _message: str | None) -> None:
        running.set()

    arguments = {"steps": 1000, "delay": 0.01, "marker": str(marker)}
    with anyio.fail_after(CALL_SECONDS):
        async with server.client() as client:
            call = asyncio.create_task(client.call_tool("jobs.long", arguments, progress_callback=on_progress))
            await running.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            cancelled = marker.with_name("job.cancelled")
            while not cancelled.exists():
                await asyncio.sleep(0.01)
            again = await client.call_tool("jobs.long", {"steps": 1, "delay": 0})
    assert cancelled.read_text() == "True"
    assert structured(again)["done"] == 1


async def test_list_changes_reach_the_other_clients(mcp_server: McpServerFactory) -> None:
    server = mcp_server(apcore_server(REPLICA_EXTENSIONS, "--dynamic"))
    heard: list[str] = []
    with anyio.fail_after(CALL_SECONDS):
        async with (
            server.client(message_handler=notifications(heard)) as listener,
            server.client() as other,
        ):
            await other.call_tool("replica.add", {"name": "added.kit"})  # registers a module
            while "notifications/tools/list_changed" not in heard:
                await asyncio.sleep(0.01)
            names = {tool.name for tool in (await listener.list_tools()).tools}
    assert "added.kit" in names


@pytest.mark.parametrize("era", ERAS)
async def test_a_scripted_server_in_memory_keeps_its_record(mcp_server: McpServerFactory, era: str) -> None:
    server = mcp_server(scripted_server(SCRIPT))
    heard: list[str] = []
    with anyio.fail_after(CALL_SECONDS):
        async with server.client(era=era, message_handler=notifications(heard)) as client:
            forecast = await client.call_tool("forecast", {"city": "Oslo"})
            await client.call_tool("announce", {})
    assert forecast.structured_content == {"sky": "sunny", "temp_c": 21}
    assert [entry["params"]["arguments"] for entry in server.requests("tools/call")] == [{"city": "Oslo"}, {}]
    if era == "legacy":  # announced to handshake-era connections (2026-07-28 clients listen for them)
        assert "notifications/tools/list_changed" in heard


async def test_output_holds_this_servers_log_records_only(mcp_server: McpServerFactory, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "kit").mkdir(parents=True)
    (broken / "kit" / "oops.py").write_text("raise RuntimeError('boom at import')\n")
    noisy = mcp_server(broken)
    quiet = mcp_server(REPLICA_EXTENSIONS)
    logging.getLogger("apcore_mcp.test").warning("the test's own line")
    async with quiet.client() as client:
        await client.list_tools()
    assert "oops.py" in noisy.output()
    assert "oops.py" not in quiet.output()
    assert "the test's own line" not in noisy.output() + quiet.output()


SCOPES = """
import pytest
from apcore_mcp.testing import apcore_server

EXTENSIONS = {extensions!r}


@pytest.mark.parametrize("turn", [1, 2])
async def test_scopes(mcp_server, seen, turn):
    servers = {{scope: mcp_server(apcore_server(EXTENSIONS), scope=scope) for scope in ("function", "module", "session")}}
    for scope, server in servers.items():
        async with server.client() as client:
            assert (await client.call_tool("replica.echo", {{"text": scope}})).structured_content["text"] == scope
        seen.append((__name__, turn, scope, server))


def test_earlier_ones(seen):
    mine = [(turn, scope, server.memory) for module, turn, scope, server in seen if module == __name__]
    function = [memory for _, scope, memory in mine if scope == "function"]
    assert len(set(map(id, function))) == 2 and all(memory.closed for memory in function)
    for scope in ("module", "session"):
        shared = {{id(memory) for _, each, memory in mine if each == scope}}
        assert len(shared) == 1
    others = [(scope, server.memory) for module, _, scope, server in seen if module != __name__]
    for scope, memory in others:  # the module before this one: its module servers have stopped
        assert memory.closed is (scope != "session")
        if scope == "session":
            assert memory in [m for _, each, m in mine if each == "session"]
"""


def test_memory_servers_in_every_scope_are_isolated_and_stopped(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest("import pytest\n\n@pytest.fixture(scope='session')\ndef seen():\n    return []\n")
    body = SCOPES.format(extensions=str(REPLICA_EXTENSIONS))
    pytester.makepyfile(test_a=body, test_b=body)
    before = list(logging.getLogger().handlers)  # this module's own servers hold theirs
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    assert logging.getLogger().handlers == before  # every server of the run stopped, the session's too


CASES = f"""
server: {{extensions_dir: {REPLICA_EXTENSIONS}}}
transports: [memory]
cases:
  - id: echoes
    tool: replica.echo
    arguments: {{text: hi}}
    expect: {{structured: {{text: hi}}}}
  - id: asks
    tool: replica.ask
    arguments: {{question: 'colour?'}}
    elicitation: {{action: accept, content: {{answer: blue}}}}
    expect: {{structured: {{asked: true, answer: blue}}}}
"""


def test_yaml_cases_run_in_memory(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makefile(".mcp.yaml", stats=CASES)
    script = f"server: {{script: {SCRIPT}}}\ntransports: [memory]\ncases:\n  - {{tool: slow, expect: {{progress_count: 3}}}}\n"
    pytester.makefile(".mcp.yaml", weather=script)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    result.stdout.fnmatch_lines(["*stats.mcp.yaml::echoes[[]memory[]] PASSED*", "*asks[[]memory-modern[]] PASSED*"])
    result.assert_outcomes(passed=6)


def test_a_stopped_shared_server_is_started_again(tmp_path: Path) -> None:
    pool = ServerPool(tmp_path)
    try:
        first = pool.get(apcore_server(REPLICA_EXTENSIONS), "memory")
        assert pool.get(apcore_server(REPLICA_EXTENSIONS), "memory") is first
        first.stop()
        second = pool.get(apcore_server(REPLICA_EXTENSIONS), "memory")
        assert second is not first and second.alive and not first.alive
    finally:
        pool.close()
    assert not second.alive
