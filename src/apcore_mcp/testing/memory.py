"""The ``memory`` transport: a server under test in the test's own process, over the MCP SDK's
in-memory streams (``mcp.Client(server)``), with no process, port or handshake probe to wait for.

``apcore_server(dir, *args)`` is read as the CLI reads it (``run.cli.parse_launch``, the same
parser, flags over ``APCORE_MCP_*`` variables) and built into a ``Bridge`` of its own;
``scripted_server(script, *args)`` plays its script with a request record in the work directory.
Any other command cannot run in process: it is refused with a ``ValueError``.

What lives while a bridge is served (its ``BridgeService``: the task runner, list-change
delivery, the sync pool) runs while at least one client of it is connected, in that client's
event loop: each test's loop gets its own, stopped when its last client leaves. So tasks
still working when the last client disconnects end as when a server stops.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp import Client

from apcore_mcp.testing import clients

if TYPE_CHECKING:
    from apcore_mcp.bridge import Bridge
    from apcore_mcp.mcp.server import ApcoreServer
    from apcore_mcp.testing.harness import ServerCommand
    from apcore_mcp.testing.scripted.server import RequestRecord

OUTPUT_LIMIT = 8_000
"""Characters of captured log output kept per server (the last ones)."""
_SETTINGS_PREFIX = "APCORE_MCP_"
_SERVING: ContextVar[ServerOutput | None] = ContextVar("apcore_mcp_memory_server", default=None)


class ServerOutput(logging.Handler):
    """The log records emitted for one in-memory server (its build and its clients' tasks), as
    text, redacted, bounded to the last ``OUTPUT_LIMIT`` characters.

    Installed on the root logger until ``close()``; it keeps only the records emitted inside
    ``capturing()`` (tasks started there inherit it), so servers side by side never mix.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lines: collections.deque[str] = collections.deque()
        self._size = 0
        self._guard = threading.Lock()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(self)

    @contextlib.contextmanager
    def capturing(self) -> Iterator[None]:
        token = _SERVING.set(self)
        try:
            yield
        finally:
            _SERVING.reset(token)

    def close(self) -> None:
        logging.getLogger().removeHandler(self)
        super().close()

    def emit(self, record: logging.LogRecord) -> None:
        if _SERVING.get() is not self:
            return  # another server's, or the test's own
        from apcore_mcp._redaction import redact

        line = redact(self.format(record)) + "\n"
        with self._guard:
            self._lines.append(line)
            self._size += len(line)
            while self._size > OUTPUT_LIMIT and len(self._lines) > 1:
                self._size -= len(self._lines.popleft())

    def text(self) -> str:
        with self._guard:
            return "".join(self._lines)


@dataclass
class _Host:
    """One event loop's ``BridgeService``, run by a task of its own (entered and left by the same task)."""

    loop: asyncio.AbstractEventLoop
    started: asyncio.Future[None]
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None
    users: int = 0


class MemoryServer:
    """An MCP server object served to in-process clients; ``close()`` ends it (idempotent)."""

    def __init__(
        self,
        server: ApcoreServer,
        log: ServerOutput,
        *,
        bridge: Bridge | None = None,
        record: RequestRecord | None = None,
    ) -> None:
        self.server = server
        self.bridge = bridge
        """The bridge served (``None`` for the scripted server): its ``registry``, its ``settings``."""
        self.log = log
        self._record = record
        self._host: _Host | None = None
        self._leaving: asyncio.Task[None] | None = None
        self.closed = False

    @contextlib.asynccontextmanager
    async def client(self, era: str = "legacy", **options: Any) -> AsyncIterator[Client]:
        """A connected ``mcp.Client`` (see ``clients.connect`` for ``era`` and ``options``)."""
        mode = clients.client_mode(era)
        options.setdefault("cache", None)
        if self.closed:
            raise RuntimeError("this in-memory server was stopped")
        with self.log.capturing():  # the SDK's server tasks start in this context: their records are ours
            async with self._served(), Client(self.server, mode=mode, **options) as client:
                yield client

    def output(self) -> str:
        return self.log.text()

    def close(self) -> None:
        self.closed = True
        self.log.close()
        if self._record is not None:
            self._record.close()

    @contextlib.asynccontextmanager
    async def _served(self) -> AsyncIterator[None]:
        if self.bridge is None:  # the scripted server has no service
            yield
            return
        host = await self._join()
        try:
            await asyncio.shield(host.started)
            yield
        finally:
            host.users -= 1
            if host.users == 0:
                await self._leave(host)

    async def _join(self) -> _Host:
        loop = asyncio.get_running_loop()
        while self._leaving is not None and not self._leaving.done():
            await asyncio.shield(self._leaving)  # the previous service ends before a new one starts
        host = self._host
        if host is not None and host.loop is not loop:
            raise RuntimeError("this in-memory server has a client still connected in another event loop")
        if host is None:
            host = _Host(loop, loop.create_future(), asyncio.Event())
            host.task = loop.create_task(self._run_service(host))
            self._host = host
        host.users += 1
        return host

    async def _leave(self, host: _Host) -> None:
        self._host = None
        host.stop.set()
        assert host.task is not None
        self._leaving = host.task
        await asyncio.shield(host.task)

    async def _run_service(self, host: _Host) -> None:
        from apcore_mcp.bridge import BridgeService

        assert self.bridge is not None
        try:
            async with BridgeService(self.bridge, handle_sighup=False):
                host.started.set_result(None)
                await host.stop.wait()
        except BaseException as exc:
            if not host.started.done():
                host.started.set_exception(exc)
            raise


def start_memory(command: ServerCommand, workdir: Path) -> MemoryServer:
    """Build ``command``'s server in this process.

    Raises:
        ValueError: the command is not one of ours (``apcore_server``, ``scripted_server``), or its
            ``env`` names a variable that would change this process rather than the server.
        ServerNotReady: the arguments, the extensions or the script are refused (the message says why).
    """
    if command.kind == "apcore":
        return _apcore(command)
    if command.kind == "scripted":
        return _scripted(command, workdir)
    raise ValueError(
        "the memory transport serves apcore_server(...), scripted_server(...), an extensions directory "
        "or a script in this process; for any other command use 'stdio' or 'streamable-http'"
    )


def _arguments(command: ServerCommand, record: Path) -> list[str]:
    """The arguments after ``python -m <module>``; nothing is bound in memory, the port only has to be valid."""
    return command.render(transport="stdio", host="127.0.0.1", port=8000, record=record)[3:]


def _apcore(command: ServerCommand) -> MemoryServer:
    from apcore_mcp.bridge import Bridge
    from apcore_mcp.run.cli import discovered_registry, parse_launch
    from apcore_mcp.run.serve import build_settings

    environ = {**os.environ, **_settings_env(command)}
    log = ServerOutput()
    try:
        with log.capturing():
            launch = parse_launch(_arguments(command, Path(os.devnull)), environ, raising=True)
            registry = discovered_registry(launch.extensions_dir, strict=bool(launch.values.get("strict_modules")))
            bridge = Bridge.build(registry, build_settings(launch.values))  # type: ignore[arg-type]
    except ValueError as exc:  # usage, discovery, settings, prompts: the CLI's exit 1 or 2
        log.close()
        raise _not_ready(command, exc) from exc
    return MemoryServer(bridge.server, log, bridge=bridge)


def _scripted(command: ServerCommand, workdir: Path) -> MemoryServer:
    from apcore_mcp.testing.fields import DocumentError
    from apcore_mcp.testing.scripted.__main__ import build_parser, script_of
    from apcore_mcp.testing.scripted.server import RequestRecord, build_server

    _settings_env(command)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        args = build_parser().parse_args(_arguments(command, workdir / "requests.jsonl"))
        script = script_of(args)
    except (SystemExit, DocumentError) as exc:
        raise _not_ready(command, exc) from None
    record = RequestRecord(args.record)
    return MemoryServer(build_server(script, record), ServerOutput(), record=record)


def _settings_env(command: ServerCommand) -> dict[str, str]:
    """``command.env``: in memory only ``APCORE_MCP_*`` settings variables can apply (to this server alone).

    Raises:
        ValueError: another variable, which only a process of its own would see.
    """
    others = sorted(name for name, _ in command.env if not name.startswith(_SETTINGS_PREFIX))
    if others:
        raise ValueError(
            f"the memory transport cannot give the server its own environment ({', '.join(others)}): "
            "set it in the test (e.g. monkeypatch.setenv) or use 'stdio' or 'streamable-http'"
        )
    return dict(command.env)


def _not_ready(command: ServerCommand, exc: BaseException) -> Exception:
    from apcore_mcp.testing.harness import ServerNotReady

    reason = f"exit status {exc.code}" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
    return ServerNotReady(f"MCP server in memory did not start: {reason}\ncommand: {' '.join(command.argv)}")
