"""The public API as a user's type checker and a user's imports see it.

``mypy --strict`` runs on small user scripts against the installed package (``py.typed``): the
entry points take ``Registry | Executor`` and every setting keyword with its type. ``__all__``
is locked here, and ``MCPServer`` is the deprecated old name of ``BackgroundServer``.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types
import typing
import warnings
from pathlib import Path

import pytest
from apcore import Registry
from scripts.update_settings_options import TARGET, render

import apcore_mcp
from apcore_mcp import BackgroundServer, Settings, SettingsOptions

PUBLIC_API = [
    "Audio",
    "BackgroundServer",
    "CallContext",
    "EmbeddedResource",
    "Image",
    "JsonSchemaModel",
    "MCPApprovalHandler",
    "MCP_ELICIT_KEY",
    "MCP_PROGRESS_KEY",
    "RegistryOrExecutor",
    "ResourceLink",
    "Settings",
    "SettingsOptions",
    "StartupHookError",
    "Text",
    "View",
    "__version__",
    "build_executor",
    "call_context",
    "close_pipeline",
    "create_app",
    "denormalize_tool_name",
    "elicit",
    "from_openai_call",
    "install_pipeline",
    "json_schema_model",
    "list_roots",
    "log_message",
    "normalize_tool_name",
    "openai_names",
    "release_stream",
    "report_progress",
    "request_inputs",
    "sample",
    "serve",
    "to_openai_tools",
]

# apcore ships no py.typed: a user follows its untyped sources to get real Registry/Executor types.
MYPY_CONFIG = """\
[mypy]
strict = True

[mypy-apcore.*]
follow_untyped_imports = True
"""

ACCEPTED = """\
from apcore import Executor, Registry
from starlette.applications import Starlette

from apcore_mcp import BackgroundServer, Settings, create_app, serve, to_openai_tools


def main(registry: Registry) -> None:
    serve(registry, transport="streamable-http", port=9000, tags=["public"], prefix="api.", dynamic=True)
    serve(Executor(registry), transport="sse", shutdown_timeout=1, rate_limit=2.5, allowed_hosts=("a.example",))
    app: Starlette = create_app(registry, Settings(port=8001))
    tools: list[dict[str, object]] = to_openai_tools(registry, strict=True, tags=["public"])
    server = BackgroundServer(Executor(registry), port=0, explorer=True, log_level="INFO")
    server.start()
    print(server.url, server.port, app, tools)
    server.stop()
    server.wait(5.0)
"""

REJECTED = """\
from apcore import Registry

from apcore_mcp import BackgroundServer, serve, to_openai_tools


def main(registry: Registry) -> None:
    serve(registry, prot=8000)
    BackgroundServer(registry, port="x")
    to_openai_tools("not a registry")
"""


def run_mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    script = tmp_path / name
    script.write_text(source)
    command = [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", ".mypy_cache", name]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def mypy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory (and mypy cache) for both scripts: the second run reuses the first's analysis."""
    return tmp_path_factory.mktemp("user")


def test_correct_use_passes_mypy_strict(mypy_dir: Path) -> None:
    result = run_mypy(mypy_dir, "accepted.py", ACCEPTED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_wrong_keyword_and_wrong_types_fail_mypy_strict(mypy_dir: Path) -> None:
    result = run_mypy(mypy_dir, "rejected.py", REJECTED)
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert len(errors) == 3, result.stdout
    assert 'rejected.py:7: error: Unexpected keyword argument "prot" for "serve"' in errors[0]
    assert 'rejected.py:8: error: Argument "port" to "BackgroundServer" has incompatible type "str"' in errors[1]
    assert 'expected "int"' in errors[1]
    assert 'rejected.py:9: error: Argument 1 to "to_openai_tools" has incompatible type "str"' in errors[2]
    assert 'expected "Registry | Executor"' in errors[2]


def union_members(hint: object) -> set[object]:
    return set(typing.get_args(hint)) if isinstance(hint, types.UnionType) else {hint}


def test_settings_options_module_is_what_the_generator_writes() -> None:
    """Run ``python scripts/update_settings_options.py`` after changing a setting."""
    assert TARGET.read_text() == render()


def test_settings_options_has_every_setting_and_accepts_its_stored_type() -> None:
    hints = typing.get_type_hints(SettingsOptions)
    stored = typing.get_type_hints(Settings)
    assert list(hints) == [item.name for item in dataclasses.fields(Settings)]
    for name, hint in hints.items():
        assert union_members(stored[name]) <= union_members(hint), name


def test_list_settings_take_lists() -> None:
    server = BackgroundServer(
        Registry(), port=0, forwarded_allow_ips=["10.0.0.0/8"], request_state_keys=["k" * 32], tags=["a"]
    )
    assert server.settings.forwarded_allow_ips == ("10.0.0.0/8",)
    assert server.settings.request_state_keys == ("k" * 32,)
    assert server.settings.tags == ("a",)


def test_all_is_the_public_api() -> None:
    """Adding or removing a public name is deliberate: update this list with it."""
    assert sorted(apcore_mcp.__all__) == PUBLIC_API
    assert len(set(apcore_mcp.__all__)) == len(apcore_mcp.__all__)
    for name in apcore_mcp.__all__:
        assert hasattr(apcore_mcp, name), name


def test_star_import_warns_about_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from apcore_mcp import *", {})


def test_mcpserver_is_a_deprecated_alias_of_background_server() -> None:
    with pytest.warns(DeprecationWarning, match="renamed BackgroundServer"):
        old = apcore_mcp.MCPServer
    assert old is BackgroundServer
    with pytest.warns(DeprecationWarning, match="renamed BackgroundServer"):
        from apcore_mcp import MCPServer
    assert MCPServer is BackgroundServer
    assert "MCPServer" not in apcore_mcp.__all__


def test_unknown_attribute_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'MCPServr'"):
        _ = apcore_mcp.MCPServr  # type: ignore[attr-defined]
