"""A module author is told what is wrong: every broken module is a WARNING naming its file, module
id and reason, never a tool listed with an empty schema whose calls answer "Internal error
occurred"; ``--strict-modules`` (``strict_modules``) turns them into a start failure listing all.

The extensions directory is served by the real CLI and called with the MCP SDK client; modules
registered wrongly through the Python API go through ``Bridge.build``/``serve()`` the same way.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry
from apcore.decorator import module
from mcp import Client
from pydantic import RootModel

from apcore_mcp import serve
from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.module_files import DECORATED, GOOD, RECURSIVE, module_file, write_files
from tests._support.modules import Echo, EchoIn, EchoOut
from tests._support.results import text_of

BROKEN: dict[str, str] = {
    "decorated.py": DECORATED,
    "broken_import.py": """
        import json
        import a_package_nobody_installed
    """,
    "dict_schema.py": """
        class DictSchema:
            description = "Schemas as JSON Schema dicts"
            input_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
            output_schema = {"type": "object"}

            def execute(self, inputs, context):
                return {}
    """,
    "no_input.py": module_file("NoInput", description="Forgot its input schema", input_schema=None),
    "two_classes.py": module_file(
        "First", after="\nclass Second(First):\n    input_schema = In\n    output_schema = Out\n"
    ),
    "no_description.py": module_file("Undescribed", description=None),
    "Bad-Name.py": GOOD,
    "system/tool.py": GOOD,
    "needs_args.py": module_file("NeedsArgs", description="Built with an argument", init="client"),
    "callable_field.py": """
        from typing import Callable
        from pydantic import BaseModel

        class In(BaseModel):
            hook: Callable[[int], int]

        class Hooked:
            description = "A field JSON Schema cannot describe"
            input_schema = In
            output_schema = In

            def execute(self, inputs, context):
                return inputs
    """,
    "tree.py": RECURSIVE,
}

# file -> (module id, what the WARNING says about it)
EXPECTED: dict[str, tuple[str, str]] = {
    "decorated.py": (
        "decorated",
        "`add` is a @module-decorated function, which apcore does not discover from a file: write it as a class",
    ),
    "broken_import.py": (
        "broken_import",
        "it cannot be imported: line 2: ModuleNotFoundError: No module named 'a_package_nobody_installed'",
    ),
    "dict_schema.py": (
        "dict_schema",
        "class `DictSchema` declares input_schema and output_schema as a dict: discovery needs pydantic models",
    ),
    "no_input.py": ("no_input", "class `NoInput` has an execute method but no input_schema of its own"),
    "two_classes.py": ("two_classes", "more than one module class in it (First, Second)"),
    "no_description.py": ("no_description", "it is not a valid module: Missing or empty description"),
    "Bad-Name.py": ("Bad-Name", "its module id (the file's path, / becoming .) is not valid, rename the file: "),
    "system/tool.py": ("system.tool", "rename the file: Module ID contains reserved word: 'system'"),
    "needs_args.py": ("needs_args", "its class cannot be built with no arguments: NeedsArgs.__init__() missing"),
    "callable_field.py": ("callable_field", "its definition cannot be built: PydanticInvalidForJsonSchema"),
    "tree.py": ("tree", "its schema cannot be rendered as MCP JSON Schema: ValueError: Circular reference: Node"),
}


def warning_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " WARNING " in line and "Module not served: " in line]


def line_about(lines: list[str], file: Path) -> str:
    found = [line for line in lines if f"{file} (module " in line]
    assert len(found) == 1, f"expected one WARNING about {file}, got {found} in:\n" + "\n".join(lines)
    return found[0]


@pytest.fixture(scope="module")
def extensions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("discovery") / "extensions"
    files = {"good.py": GOOD, "demo/echo.py": GOOD, "_helpers.py": "import not_imported_by_anyone\n", **BROKEN}
    return write_files(root, files)


@pytest.fixture(scope="module")
def served(extensions: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(apcore_server(extensions), "streamable-http", tmp_path_factory.mktemp("served"))
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("file", sorted(EXPECTED))
def test_each_broken_file_is_a_warning_naming_it(served: RunningServer, extensions: Path, file: str) -> None:
    module_id, reason = EXPECTED[file]
    line = line_about(warning_lines(served.log_path.read_text()), extensions / file)
    assert f"{extensions / file} (module '{module_id}'): " in line
    assert reason in line, line


async def test_good_modules_are_served_and_broken_ones_are_not_listed(served: RunningServer) -> None:
    log = served.log_path.read_text()
    assert "_helpers" not in log  # apcore skips `_` files on purpose: nothing to warn about
    assert "No Module subclass found" not in log  # apcore's own words are replaced, not repeated
    async with served.client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == ["demo.echo", "good"]
        assert tools["good"].input_schema["required"] == ["text"]
        result = await client.call_tool("demo.echo", {"text": "still served"})
        assert result.structured_content == {"echo": "still served"}
        missing = await client.call_tool("decorated", {"a": 1, "b": 2})
        assert missing.is_error and "Internal error" not in text_of(missing)


def strict_run(extensions: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with ``--strict-modules`` over stdio, stdin closed at once (a served one exits then)."""
    argv = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(extensions), "--strict-modules", *args]
    return subprocess.run(argv, input="", capture_output=True, text=True, timeout=60, check=False)


def test_strict_modules_fails_the_start_listing_every_problem(extensions: Path) -> None:
    run = strict_run(extensions)
    assert run.returncode == 2, run
    [error] = [line for line in run.stderr.splitlines() if line.startswith("Error: ")]
    assert f"Error: {len(EXPECTED)} module problem(s), and strict_modules (--strict-modules) is on" in error
    for file, (module_id, reason) in EXPECTED.items():
        assert f"{extensions / file} (module '{module_id}'): " in error and reason in error, file
    assert "started" not in run.stderr


def test_strict_modules_fails_on_a_problem_found_after_discovery(tmp_path: Path) -> None:
    # Discovery registers it; only describing it fails (the bridge's own check decides).
    extensions = write_files(tmp_path / "ext", {"good.py": GOOD, "tree.py": BROKEN["tree.py"]})
    run = strict_run(extensions)
    assert run.returncode == 2, run
    assert "1 module problem(s)" in run.stderr and f"{extensions / 'tree.py'} (module 'tree')" in run.stderr


async def test_strict_modules_serves_good_modules(tmp_path: Path) -> None:
    extensions = write_files(tmp_path / "ext", {"good.py": GOOD, "_private.py": "raise SystemExit(3)\n"})
    server = start_server(apcore_server(extensions, "--strict-modules"), "streamable-http", tmp_path / "run")
    try:
        async with server.client() as client:
            result = await client.call_tool("good", {"text": "strict and fine"})
        assert result.structured_content == {"echo": "strict and fine"}
        assert not warning_lines(server.log_path.read_text())
    finally:
        server.stop()


# -- modules registered through the Python API ---------------------------------------------------


def add_numbers(a: int, b: int) -> int:
    return a + b


add: Any = module(id="add", description="Add two numbers")(add_numbers)  # `@module(...)` above it, unregistered


class NoExecute:
    description = "Has schemas, no execute"
    input_schema = EchoIn
    output_schema = EchoOut


class NoInputSchema:
    description = "Has execute, no input schema"
    output_schema = EchoOut

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": "never"}


class Numbers(RootModel[list[int]]):
    pass


class ListInput(NoInputSchema):
    description = "Arguments as a list"
    input_schema = Numbers


def shown(path: str) -> str:
    """A file as the WARNING names it: relative to the working directory when below it."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(Path.cwd())) if resolved.is_relative_to(Path.cwd()) else path


HERE = shown(__file__)

REGISTERED: dict[str, tuple[Any, str, str]] = {
    "wrong.decorated": (
        add,
        "a @module-decorated function was registered instead of its module: register `func.apcore_module`",
        HERE,
    ),
    "wrong.a_class": (
        Echo,
        "the class Echo was registered instead of an instance of it: register Echo()",
        shown(str(Path(sys.modules[Echo.__module__].__file__ or ""))),
    ),
    "wrong.no_execute": (NoExecute(), "it has no execute method", HERE),
    "wrong.no_input": (
        NoInputSchema(),
        "it has no input_schema: without one its arguments would be listed as empty",
        HERE,
    ),
    "wrong.list_input": (
        ListInput(),
        "its input schema is of type 'array', not 'object'",
        HERE,
    ),
}


def wrong_registry() -> Registry:
    registry = Registry()
    registry.register("right.add", add.apcore_module)  # the right way to register a decorated function
    for module_id, (target, _, _) in REGISTERED.items():
        registry.register(module_id, target)
    return registry


async def test_registered_wrongly_is_a_warning_not_an_empty_schema(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="apcore_mcp"):
        bridge = Bridge.build(wrong_registry())
    lines = [record.getMessage() for record in caplog.records if record.name == "apcore_mcp.tools.catalog"]
    for module_id, (_, reason, file) in REGISTERED.items():
        [line] = [line for line in lines if f"module '{module_id}'" in line]
        assert reason in line, line
        assert line.startswith(f"Module not served: {file} (module '{module_id}'): "), line
    assert [problem.module_id for problem in bridge.catalog.problems()] == sorted(REGISTERED)
    async with Client(bridge.server, mode="legacy", cache=None) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["right.add"]
        assert (await client.call_tool("right.add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        refused = await client.call_tool("wrong.decorated", {"a": 2, "b": 3})
        assert refused.is_error and "Internal error" not in text_of(refused)


def test_strict_modules_refuses_a_wrong_registration_at_build() -> None:
    with pytest.raises(ValueError, match=r"5 module problem\(s\)") as raised:
        Bridge.build(wrong_registry(), Settings(strict_modules=True))
    for module_id, (_, reason, file) in REGISTERED.items():
        assert f"{file} (module '{module_id}'): {reason}" in str(raised.value)


def test_serve_with_strict_modules_raises_before_serving() -> None:
    registry = Registry()
    registry.register("wrong.decorated", add)
    with pytest.raises(ValueError, match="wrong.decorated.*a @module-decorated function was registered"):
        serve(registry, strict_modules=True)  # stdio: it would block reading stdin had it started


def test_strict_modules_accepts_right_registrations() -> None:
    registry = Registry()
    registry.register("right.add", add.apcore_module)
    registry.register("right.echo", Echo())
    bridge = Bridge.build(registry, Settings(strict_modules=True))
    assert [record.name for record in bridge.catalog.records()] == ["right.add", "right.echo"]
    assert bridge.catalog.problems() == ()
