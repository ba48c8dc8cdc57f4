"""The pytest plugin of ``apcore-mcp[testing]`` (entry point ``pytest11``: no conftest needed).

- Fixture ``mcp_server``: a factory ``mcp_server(server, transport="memory", *,
  scope="function", timeout=None) -> RunningServer``. ``server`` is a ``ServerCommand``
  (``apcore_server(...)``, ``scripted_server(...)``, ``command_server(...)``), an extensions
  directory, or a script file. ``transport``: ``memory`` (the default: in this process, over the
  SDK's in-memory streams; not for ``command_server``), ``stdio``, ``streamable-http`` or ``sse``
  (a process each). ``scope`` picks who shares it: this test, this module, or the whole session
  (one server per command and transport, shared by every test that asks).
- ``*.mcp.yaml`` files are collected: one item per case and transport (``yaml_cases``).
- ini options: ``mcp_ready_timeout`` (seconds, default 30) and ``mcp_call_timeout`` (60).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from apcore_mcp.testing.expect import Outcome, check
from apcore_mcp.testing.fields import DocumentError
from apcore_mcp.testing.harness import (
    RunningServer,
    ServerCommand,
    ServerNotReady,
    apcore_server,
    remote_server,
    scripted_server,
    start_server,
)
from apcore_mcp.testing.shared_servers import ServerPool
from apcore_mcp.testing.yaml_cases import Case, CaseFile, load_case_file, run_case, variant_id

SCOPES = ("function", "module", "session")
_SESSION_POOL = pytest.StashKey[ServerPool]()


class McpServerFactory:
    """What the ``mcp_server`` fixture gives a test: call it to get a ready server."""

    def __init__(self, pools: dict[str, ServerPool], timeout: float) -> None:
        self._pools = pools
        self._timeout = timeout

    def __call__(
        self,
        server: ServerCommand | str | Path,
        transport: str = "memory",
        *,
        scope: str = "function",
        timeout: float | None = None,
    ) -> RunningServer:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        return self._pools[scope].get(as_command(server), transport, timeout=timeout or self._timeout)


def as_command(server: ServerCommand | str | Path) -> ServerCommand:
    """A ``ServerCommand`` as is; a directory as an apcore extensions dir; a YAML file as a script."""
    if isinstance(server, ServerCommand):
        return server
    path = Path(server)
    if path.is_dir():
        return apcore_server(path)
    if path.is_file() and path.suffix in (".yaml", ".yml"):
        return scripted_server(path)
    raise ValueError(f"{server!s} is neither an extensions directory nor a script file (nor a ServerCommand)")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("mcp_ready_timeout", "seconds an MCP server under test gets to become ready", default="30")
    parser.addini("mcp_call_timeout", "seconds a declarative MCP case's tool call may take", default="60")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION_POOL] = ServerPool()
    config.addinivalue_line("markers", "mcp_case: a declarative MCP test case from a *.mcp.yaml file")


def pytest_unconfigure(config: pytest.Config) -> None:
    pool = config.stash.get(_SESSION_POOL, None)
    if pool is not None:
        pool.close()


def _ready_timeout(config: pytest.Config) -> float:
    return float(config.getini("mcp_ready_timeout"))


@pytest.fixture(scope="module")
def _mcp_module_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    pool = ServerPool(tmp_path_factory.mktemp("mcp-module"))
    yield pool
    pool.close()


@pytest.fixture
def mcp_server(
    request: pytest.FixtureRequest, _mcp_module_pool: ServerPool, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServerFactory]:
    """Start MCP servers for this test (see the module docstring); stopped after it, pass or fail."""
    function_pool = ServerPool(tmp_path_factory.mktemp("mcp"))
    pools = {"function": function_pool, "module": _mcp_module_pool, "session": request.config.stash[_SESSION_POOL]}
    try:
        yield McpServerFactory(pools, _ready_timeout(request.config))
    finally:
        function_pool.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(".mcp.yaml"):
        collector: pytest.Collector = McpCaseFile.from_parent(parent, path=file_path)
        return collector
    return None


class McpCaseFile(pytest.File):
    """A ``*.mcp.yaml`` file: one item per case and transport (and era)."""

    def collect(self) -> Iterator[pytest.Item]:
        try:
            spec = load_case_file(self.path)
        except DocumentError as exc:
            raise self.CollectError(str(exc)) from None
        for case in spec.cases:
            for transport, era in spec.variants():
                name = f"{case.id}[{variant_id(transport, era)}]"
                yield McpCaseItem.from_parent(self, name=name, spec=spec, case=case, transport=transport, era=era)


class CaseFailed(AssertionError):
    """A case's expectations did not hold; the message lists each one with a diff."""


class McpCaseItem(pytest.Item):
    def __init__(self, *, spec: CaseFile, case: Case, transport: str, era: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec, self.case, self.transport, self.era = spec, case, transport, era
        self.add_marker("mcp_case")

    def runtest(self) -> None:
        seconds = float(self.config.getini("mcp_call_timeout"))
        with self._server() as server:
            outcome = anyio.run(_run_bounded, server, self.era, self.case, seconds)
        problems = check(self.case.expect, outcome)
        if problems:
            arguments = ", ".join(f"{k}={v!r}" for k, v in self.case.arguments.items())
            header = f"{self.case.tool}({arguments}) on {variant_id(self.transport, self.era)}"
            raise CaseFailed(header + "\n" + "\n".join(f"- {p}" for p in problems))

    @contextlib.contextmanager
    def _server(self) -> Iterator[RunningServer]:
        """A scripted server of its own (fresh turn queues: the case passes or fails alone, as
        with ``-k``); a started server shared for the session; or a server someone else runs."""
        timeout = _ready_timeout(self.config)
        if self.spec.url is not None:
            workdir = self.config.stash[_SESSION_POOL].workdir / "remote"
            yield remote_server(self.spec.url, self.transport, workdir=workdir, timeout=timeout)
            return
        assert self.spec.command is not None
        if not self.spec.scripted:
            yield self.config.stash[_SESSION_POOL].get(self.spec.command, self.transport, timeout=timeout)
            return
        own = ServerPool()
        try:
            yield own.get(self.spec.command, self.transport, timeout=timeout)
        finally:
            own.close()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed | ServerNotReady | TimeoutError):
            return f"{self.path.name}: case {self.case.id!r}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"mcp case {self.name}"


async def _run_bounded(server: RunningServer, era: str, case: Case, seconds: float) -> Outcome:
    try:
        with anyio.fail_after(seconds):
            return await run_case(server, era, case)
    except TimeoutError:
        raise TimeoutError(f"no answer to {case.tool} within {seconds:g}s (ini option mcp_call_timeout)") from None


__all__ = ["McpServerFactory", "as_command", "start_server"]
