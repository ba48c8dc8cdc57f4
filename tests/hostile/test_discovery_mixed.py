"""Broken modules where discovery meets the other features: beside upstream servers and in search
mode, registered while serving, laid out so apcore's scanner skips them without a word, and with
the logs turned down. Each is named with its reason; none is served with an empty schema."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry
from apcore.decorator import module
from mcp import Client

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.testing import apcore_server, start_server

from tests._support.module_files import DECORATED, GOOD, RECURSIVE, write_files
from tests._support.modules import Echo
from tests._support.results import text_of
from tests._support.upstreams import stdio_entry


def not_served(log: str) -> list[str]:
    return [line.split("Module not served: ", 1)[1] for line in log.splitlines() if "Module not served: " in line]


def run_stdio(extensions: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI over stdio with stdin closed at once: it starts (or refuses to), then exits."""
    argv = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(extensions), *args]
    return subprocess.run(argv, input="", capture_output=True, text=True, timeout=60, check=False)


async def test_broken_modules_beside_upstreams_in_search_mode(tmp_path: Path) -> None:
    extensions = write_files(
        tmp_path / "extensions", {"good.py": GOOD, "decorated.py": DECORATED, "tree.py": RECURSIVE}
    )
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": stdio_entry()}}))
    command = apcore_server(extensions, "--mcp-config", str(config), "--tool-mode", "search")
    server = start_server(command, "streamable-http", tmp_path / "run")
    try:
        async with server.client() as client:
            found = await client.call_tool("search_tools", {"query": "add two numbers tree echo", "limit": 50})
            assert found.structured_content is not None
            names = {tool["name"] for tool in found.structured_content["tools"]}
            assert {"good", "notes.echo"} <= names and not {"decorated", "tree"} & names
            for broken in ("decorated", "tree"):
                refused = await client.call_tool("invoke_tool", {"name": broken, "arguments": {"a": 1, "b": 2}})
                assert refused.is_error and "Internal error" not in text_of(refused), broken
            echoed = await client.call_tool("invoke_tool", {"name": "good", "arguments": {"text": "fine"}})
            assert echoed.structured_content == {"echo": "fine"}
        lines = not_served(server.log_path.read_text())
        assert any(line.startswith(f"{extensions / 'decorated.py'} (module 'decorated'): ") for line in lines), lines
        assert any(line.startswith(f"{extensions / 'tree.py'} (module 'tree'): its schema") for line in lines), lines
        assert "@module-decorated function" in next(line for line in lines if "decorated.py" in line)
    finally:
        server.stop()


def add_numbers(a: int, b: int) -> int:
    return a + b


add: Any = module(id="add", description="Add two numbers")(add_numbers)


async def test_a_module_registered_wrongly_while_serving_is_not_listed(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    registry.register("first", Echo())
    bridge = Bridge.build(registry, Settings(dynamic=True))
    async with BridgeService(bridge), Client(bridge.server, mode="legacy", cache=None) as client:
        with caplog.at_level(logging.WARNING, logger="apcore_mcp"):
            registry.register("late.add", add)  # the decorated function, not add.apcore_module
        registry.register("late.echo", Echo())
        deadline = time.monotonic() + 10
        names: list[str] = []
        while "late.echo" not in names and time.monotonic() < deadline:
            names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["first", "late.echo"]
        refused = await client.call_tool("late.add", {"a": 1, "b": 2})
        assert refused.is_error and "Internal error" not in text_of(refused)
    [line] = [record.getMessage() for record in caplog.records if "late.add" in record.getMessage()]
    assert line.startswith("Module not served: ") and "(module 'late.add'): a @module-decorated function" in line


def test_files_the_scanner_passes_over_are_named(tmp_path: Path) -> None:
    outside = write_files(tmp_path / "outside", {"linked.py": GOOD})
    extensions = write_files(
        tmp_path / "extensions",
        {"a/b.py": GOOD, "a.b.py": GOOD, "d2/d3/d4/d5/d6/d7/d8/d9/deep.py": GOOD, "ok.py": GOOD},
    )
    os.symlink(outside / "linked.py", extensions / "linked.py")
    os.symlink(outside, extensions / "shared")
    run = run_stdio(extensions, "--log-level", "WARNING")
    lines = not_served(run.stderr)
    duplicate = [line for line in lines if "another file has the same module id" in line]
    assert len(duplicate) == 1 and "(module 'a.b')" in duplicate[0], lines  # which one apcore keeps varies
    deep = extensions / "d2/d3/d4/d5/d6/d7/d8/d9"
    assert f"{deep}: it is deeper than apcore scans (8 directory levels): nothing below is discovered" in lines
    for link in ("linked.py", "shared"):
        assert f"{extensions / link}: it is a symbolic link, which apcore does not follow" in "\n".join(lines), link
    assert len(lines) == 4, lines


def test_strict_modules_counts_problems_the_log_level_hides(tmp_path: Path) -> None:
    extensions = write_files(tmp_path / "extensions", {"good.py": GOOD, "decorated.py": DECORATED})
    run = run_stdio(extensions, "--strict-modules", "--log-level", "ERROR")
    assert run.returncode == 2, run
    assert " WARNING apcore" not in run.stderr  # the level asked for is kept
    assert f"{extensions / 'decorated.py'} (module 'decorated'): no module class in it" in run.stderr
    quiet = run_stdio(extensions, "--log-level", "ERROR")  # without strict: served, nothing said
    assert quiet.returncode == 0 and " WARNING apcore" not in quiet.stderr, quiet
