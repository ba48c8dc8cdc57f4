"""Every fenced block of README.md and docs/ is accounted for, and the runnable ones run as written.

A block is accounted for when one of these holds:

- an HTML comment right before it says ``<!-- not run: REASON -->`` (a reason is required);
- a comment right before it says ``<!-- run by: PATH -->`` (the colon may be left out): the test
  file PATH runs it and names the page, or ``<!-- run by: tests/project/test_docs.py#ID -->``: a test of
  this file runs it;
- it is a ``# file:`` or ``# run:`` block of docs/testing.md (tests/testing/test_testing_docs.py runs those);
- it is an unmarked ``python`` block: ``test_an_unmarked_python_block_runs`` runs it from the
  repository root, as a script whose stdin is closed;
- it is an unmarked ``json`` block (parsed; an ``mcpServers`` document is checked by the upstream
  config checker) or ``yaml`` block (parsed).

The blocks run here use the documented command lines as written, with only the port changed to a
free one on 127.0.0.1; every server is a process group of its own, stopped after its test.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from scripts.update_docs import TABLES, stale_pages

from apcore_mcp.settings import Settings
from apcore_mcp.settings.declared import options
from apcore_mcp.testing import RunningServer, command_server, start_server

from tests._support.doc_blocks import (
    BIN,
    DOCS,
    README,
    REPO,
    Block,
    all_blocks,
    blocks_of,
    clean_env,
    marked,
    one,
    pages,
    run_by_testing_docs,
)
from tests._support.node import SDK_VERSION, run_ts_client
from tests._support.results import text_of
from tests._support.upstreams import stdio_entry

RUN_HERE = {
    "quickstart",
    "first-client",
    "protocol-era",
    "serving-http",
    "metrics-curl",
    "openai-curl",
    "openai-agents",
    "embedding",
    "upstream-cli",
    "request-state-keys",
    "update-docs",
    "explorer",
}
"""The ids of ``<!-- run by: tests/project/test_docs.py#ID -->``: each is run by a test below."""
README_SET_UP = [
    "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt . && .venv/bin/apcore-mcp "
    "--extensions-dir examples/extensions --transport streamable-http",
    "bash scripts/test.sh",
]


# -- the accounting -------------------------------------------------------------------------------


def problem_of(block: Block) -> str | None:
    """Why ``block`` is not accounted for, or None."""
    reason = block.marker("not run")
    runner = block.marker("run by")
    if reason is not None:
        return None if reason else "a 'not run:' marker needs a reason"
    if runner is not None:
        path, _, block_id = runner.partition("#")
        if not (REPO / path).is_file():
            return f"run by {path}: no such file"
        if block_id:
            if path != "tests/project/test_docs.py" or block_id not in RUN_HERE:
                return f"run by {runner}: no test of tests/project/test_docs.py runs the id {block_id!r}"
            return None
        if block.page.name not in (REPO / path).read_text():
            return f"run by {path}: that file does not read {block.page.name}"
        return None
    if run_by_testing_docs(block):
        return (
            None
            if "testing.md" in (REPO / "tests" / "testing" / "test_testing_docs.py").read_text()
            else "testing.md unread"
        )
    if block.lang in ("python", "json", "yaml"):
        return None  # run, or parsed and checked, below
    return f"a {block.lang or 'plain'} block with no '<!-- not run: REASON -->' or '<!-- run by: ... -->' before it"


def test_every_block_of_the_readme_and_the_docs_is_accounted_for() -> None:
    found = all_blocks()
    assert len(found) > 40
    problems = [f"{block.where}: {problem}" for block in found if (problem := problem_of(block))]
    assert problems == []


def test_every_block_id_run_here_is_used_by_the_docs() -> None:
    used = {
        runner.partition("#")[2]
        for block in all_blocks()
        if (runner := block.marker("run by")) and runner.startswith("tests/project/test_docs.py#")
    }
    assert used == RUN_HERE


def test_the_readme_is_short_and_its_set_up_commands_are_the_two_documented_ones() -> None:
    lines = README.read_text().split("\n")
    assert len(lines) < 250
    commands = [block.body.strip() for block in blocks_of(README) if block.lang in ("bash", "sh", "shell")]
    assert commands == README_SET_UP
    quickstart = [block.body.strip() for block in marked("quickstart") if block.page != README]
    assert README_SET_UP[0] in quickstart  # the docs' quick start is the README's, word for word


def test_the_readme_installs_the_extra_its_mkdocs_commands_need() -> None:
    text = " ".join(README.read_text().split())
    install = re.search(r'`\.venv/bin/pip install -c constraints\.txt "\.\[(\w+)\]"`', text)
    assert install is not None, "the README says how to install MkDocs"
    assert install.start() < text.index("`.venv/bin/mkdocs build`")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = {re.split(r"[<>=\[;]", requirement)[0].strip() for requirement in extras[install.group(1)]}
    assert {"mkdocs", "mkdocs-material"} <= wanted  # the theme of mkdocs.yml too
    pinned = (REPO / "constraints.txt").read_text().split()
    assert any(line.startswith("mkdocs==") for line in pinned)


# -- generated tables -----------------------------------------------------------------------------


def test_the_generated_tables_are_what_scripts_update_docs_writes() -> None:
    assert stale_pages() == []
    for name, (page, _) in TABLES.items():
        assert f"<!-- {name} -->" in (DOCS / page).read_text()


def test_the_settings_table_appears_once_with_every_setting() -> None:
    settings_page = (DOCS / "settings.md").read_text()
    for opt in options():
        assert settings_page.count(f"| `{opt.name}`<br>") == 1, opt.name
    # No other page repeats it: at most a few rows naming flags or variables in a table's first cell.
    row = re.compile(r"^\| `(--[\w-]+|APCORE_MCP_\w+)")
    for page in pages():
        if page.name != "settings.md":
            rows = [line for line in page.read_text().split("\n") if row.match(line)]
            assert len(rows) <= 5, f"{page.name} repeats the settings table: {rows[:3]}"


# -- the blocks run here --------------------------------------------------------------------------


def venv_argv(command: str) -> list[str]:
    """A documented command line's words, its program taken from this venv's bin/ (``.venv/bin/x`` or ``x``)."""
    argv = shlex.split(command)
    argv[0] = str(BIN / Path(argv[0]).name)
    return argv


def on_port(argv: list[str]) -> list[str]:
    """``argv`` on a free port: its ``--port`` value, or an added one, is the harness's ``{port}``."""
    if "--port" in argv:
        argv = list(argv)
        argv[argv.index("--port") + 1] = "{port}"
        return argv
    return [*argv, "--port", "{port}"]


def serve(argv: list[str], workdir: Path, *, cwd: Path = REPO, health: str = "/health") -> RunningServer:
    command = command_server(argv, cwd=cwd, env=clean_env(), health_path=health)
    return start_server(command, "streamable-http", workdir)


def mcp_url(server: RunningServer) -> str:
    assert server.url is not None  # an HTTP server
    return server.url


def base_url(server: RunningServer) -> str:
    assert server.base_url is not None  # an HTTP server
    return server.base_url


def get(command: str, server: RunningServer) -> str:
    """What a documented ``curl URL`` command prints, against ``server`` instead of port 8000."""
    argv = shlex.split(command.replace("http://127.0.0.1:8000", base_url(server)))
    assert argv[0] == "curl", argv
    url = next(word for word in argv if word.startswith("http"))
    if shutil.which("curl"):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout
    with urllib.request.urlopen(url, timeout=30) as answer:
        return str(answer.read().decode())


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The quick start's server, from its command line (the venv and the install are this suite's own)."""
    commands = {block.body.strip() for block in marked("quickstart") if not block.body.startswith("curl ")}
    assert commands == {README_SET_UP[0]}  # the README's and the docs' are one command
    command = README_SET_UP[0]
    server_part = command.split("&&")[-1].strip()
    server = serve(on_port(venv_argv(server_part)), tmp_path_factory.mktemp("quickstart"))
    try:
        yield server
    finally:
        server.stop()


def test_the_quick_start_serves_what_its_health_check_says(quickstart: RunningServer) -> None:
    curls = [block for block in marked("quickstart") if block.body.startswith("curl ")]
    readme_curl = re.search(r"`(curl http://127.0.0.1:8000/health)`", README.read_text())
    assert readme_curl is not None  # the README says it in a sentence
    assert curls
    for command in [*(block.body.strip() for block in curls), readme_curl.group(1)]:
        health = json.loads(get(command, quickstart))
        assert health["status"] == "ok"
        assert health["module_count"] == 5


def test_the_first_client_lists_and_calls(quickstart: RunningServer) -> None:
    block = one("first-client", "python")
    code = block.body.replace("http://127.0.0.1:8000/mcp", mcp_url(quickstart))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    names, structured = done.stdout.splitlines()[:2]
    assert "'text.stats'" in names
    assert "'words': 5" in structured


def test_the_protocol_era_example_prints_what_its_comments_say(quickstart: RunningServer) -> None:
    block = one("protocol-era", "python")
    code = block.body.replace("http://127.0.0.1:8000/mcp", mcp_url(quickstart))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    said = [line.strip().removeprefix("# ") for line in block.body.splitlines() if line.strip().startswith("# ")]
    assert done.stdout.splitlines() == said == ["legacy 2025-11-25 3", "auto 2026-07-28 3"]


@pytest.mark.node
@pytest.mark.interop
def test_the_typescript_sdk_gets_the_era_the_quick_start_says(quickstart: RunningServer) -> None:
    page = " ".join((DOCS / "quickstart.md").read_text().split())
    said = re.search(
        r"TypeScript SDK \(1\.x; our tests run ([\d.]+)\) always sends `initialize` and gets ([\d-]+)", page
    )
    assert said is not None
    run = run_ts_client(quickstart, "--list")
    assert run.returncode == 0, run
    assert run.report["protocolVersion"] == said.group(2), run
    assert said.group(1) == SDK_VERSION


async def test_the_metrics_command_finds_the_calls(quickstart: RunningServer) -> None:
    async with Client(mcp_url(quickstart)) as client:  # a call to count, whichever test ran before
        await client.call_tool("text.stats", {"text": "counted"})
    block = one("metrics-curl")
    command = block.body.strip()
    curl, _, pattern = command.partition(" | grep ")
    exposition = get(curl, quickstart)
    wanted = re.compile(shlex.split(pattern)[0], re.MULTILINE)
    assert wanted.search(exposition), exposition[:500]


def test_the_openai_tools_command_answers(quickstart: RunningServer) -> None:
    for block in marked("openai-curl"):
        tools = json.loads(get(block.body.strip(), quickstart))
        assert {tool["function"]["name"] for tool in tools} == {"text-stats", "geo-distance"}  # the tag public
        assert all(tool["function"]["strict"] for tool in tools)


def test_the_agents_sdk_example_lists_strict_tools_and_calls_one(quickstart: RunningServer) -> None:
    block = one("openai-agents", "python")
    code = block.body.replace("http://127.0.0.1:8000/mcp", mcp_url(quickstart))
    env = {key: value for key, value in clean_env().items() if not key.startswith("OPENAI_")}  # no key, no model
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    listed, words = done.stdout.splitlines()
    names = ["files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"]
    assert listed == repr([(name, True) for name in names])  # every example module, strict
    assert words == "5"


def test_the_serving_page_http_command_serves(tmp_path: Path) -> None:
    argv = venv_argv(one("serving-http").body.split("#", 1)[0].strip())
    server = serve(on_port(argv), tmp_path)
    try:
        with urllib.request.urlopen(f"{base_url(server)}/health", timeout=10) as health:
            assert json.loads(health.read())["module_count"] == 5
    finally:
        server.stop()


async def test_the_embedding_page_runs_as_written(tmp_path: Path) -> None:
    source = one("embedding", "python")
    name = source.first_line.removeprefix("# file: ").strip()
    (tmp_path / name).write_text(source.body)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    argv = on_port(venv_argv(one("embedding").body.strip()))
    server = serve(argv, tmp_path / "run", cwd=tmp_path, health="/tools/health")
    try:
        with urllib.request.urlopen(f"{base_url(server)}/", timeout=10) as home:
            assert home.read() == b"my service"
        async with Client(f"{base_url(server)}/tools/mcp") as client:
            result = await client.call_tool("text.stats", {"text": "a b a"})
        assert result.structured_content is not None
        assert result.structured_content["words"] == 3
        with urllib.request.urlopen(f"{base_url(server)}/tools/sse", timeout=10) as stream:
            first_event = stream.readline() + stream.readline()
        assert b"event: endpoint" in first_event
        assert b"data: /tools/messages/" in first_event
    finally:
        server.stop()


async def test_the_explorer_command_serves_a_page_that_calls_over_mcp(tmp_path: Path) -> None:
    argv = on_port(venv_argv(one("explorer").body.strip()))
    server = serve(argv, tmp_path)
    try:
        with urllib.request.urlopen(f"{base_url(server)}/explorer/", timeout=10) as page:
            assert b"<!doctype html>" in page.read(200)
            assert "script-src 'sha256-" in page.headers["Content-Security-Policy"]
        with urllib.request.urlopen(f"{base_url(server)}/explorer/config", timeout=10) as answer:
            config = json.loads(answer.read())
        assert config["allowExecute"] is True
        async with Client(base_url(server) + config["mcpPath"]) as client:  # the page's own MCP endpoint
            result = await client.call_tool("text.stats", {"text": "a b a"})
        assert result.structured_content is not None
        assert result.structured_content["words"] == 3
    finally:
        server.stop()


async def test_the_upstream_command_mounts_a_server(tmp_path: Path) -> None:
    argv = on_port(venv_argv(one("upstream-cli").body.strip()))
    assert argv[argv.index("--extensions-dir") + 1] == "./extensions"
    assert argv[argv.index("--mcp-config") + 1] == "mcp.json"
    (tmp_path / "extensions").symlink_to(REPO / "examples" / "extensions")
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"simple": stdio_entry()}}))
    server = serve(argv, tmp_path / "run", cwd=tmp_path)
    try:
        async with Client(mcp_url(server)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"text.stats", "simple.echo"} <= names
            assert text_of(await client.call_tool("simple.echo", {"text": "hello"})) == "hello"
    finally:
        server.stop()


def test_the_request_state_key_command_makes_a_key_settings_accept() -> None:
    block = one("request-state-keys")
    script = block.body + 'echo "$APCORE_MCP_REQUEST_STATE_KEYS"\n'
    env = {**clean_env(), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env, check=True)
    key = done.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert Settings(request_state_keys=[key]).request_state_keys == (key,)


def test_the_update_docs_command_finds_nothing_to_write() -> None:
    argv = venv_argv(one("update-docs").body.strip())
    assert argv[1:] == ["scripts/update_docs.py"]
    done = subprocess.run([*argv, "--check"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
