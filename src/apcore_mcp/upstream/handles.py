"""Shared upstream handles: one running server per key, counted references, restarts with back-off.

A key is the server's whole spec (``ServerSpec.key``: command, args, sorted env, cwd, or
url and sorted headers) plus the principal when the server's sharing policy asks for one.
``acquire`` starts the server on first use (one start even when many acquire at once) and
hands out a ``Lease``; ``release`` drops a reference and stops the server with the last one.
A lease always reaches a live connection: one that died is replaced on next use, at once
the first time, then after a doubling delay while it keeps failing. Each key has its own
lock, so a server that hangs at start-up delays only its own callers, for at most its
``timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp.types as types
from mcp.shared.dispatcher import ProgressFnT

from apcore_mcp.upstream.config.parse import ServerSpec
from apcore_mcp.upstream.connection import Asker, Connection
from apcore_mcp.upstream.errors import ConnectionLost, SessionLost, UpstreamUnavailable
from apcore_mcp.upstream.expand import RedactingFilter, Redactor, install_filter, remove_filter
from apcore_mcp.upstream.remote import MAX_MESSAGE_BYTES
from apcore_mcp.upstream.stdio import WireStats

logger = logging.getLogger(__name__)

T = TypeVar("T")
HandleKey = tuple[tuple[Any, ...], str | None]
STABLE_SECONDS = 10.0
"""A connection that lived this long before it died is not counted as a failure."""


def handle_key(spec: ServerSpec, principal: str | None = None) -> HandleKey:
    return (spec.key, principal)


def backoff_delay(failures: int, base: float, cap: float) -> float:
    """Seconds to wait before the next start after ``failures`` consecutive failures (0 for the first)."""
    if failures <= 1:
        return 0.0
    return float(min(base * 2 ** (failures - 2), cap))


@dataclass(eq=False)
class _Entry:
    key: HandleKey
    spec: ServerSpec
    refs: int = 0
    connection: Connection | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    failures: int = 0
    retry_at: float = 0.0
    starts: int = 0
    listeners: list[Callable[[], None]] = field(default_factory=list)
    stats: WireStats = field(default_factory=WireStats)
    error: str = ""
    """Why the last start failed, as ``/ready`` may show it (``UpstreamError.public``; ``""`` once one succeeds)."""

    def tools_changed(self) -> None:
        for listener in list(self.listeners):
            listener()


class UpstreamPool:
    """The running upstream servers of one process; use as ``async with UpstreamPool() as pool``.

    While open, every log record, whatever logger made it, has ``redactor``'s secrets masked
    as it is made (see ``expand.install_filter``).

    Connections run in the pool's task group, not in the task that happened to start them,
    so a request that triggers a (re)start does not own the server. Leaving the block stops
    every server still running.
    """

    def __init__(
        self,
        *,
        redactor: Redactor | None = None,
        log_dir: str | Path | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.redactor = redactor or Redactor()
        self.log_dir = Path(log_dir) if log_dir else None
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_message_bytes = max_message_bytes
        self._entries: dict[HandleKey, _Entry] = {}
        self._backoff: dict[HandleKey, tuple[int, float]] = {}
        """(failures, retry_at) of keys no one holds: a failed start is remembered across acquires."""
        self._task_group: anyio.abc.TaskGroup | None = None
        self._filter: RedactingFilter | None = None

    async def __aenter__(self) -> UpstreamPool:
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self._filter = install_filter(self.redactor)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        with anyio.CancelScope(shield=True):
            await self.close()
        if self._filter is not None:
            remove_filter(self._filter)
            self._filter = None
        task_group, self._task_group = self._task_group, None
        assert task_group is not None
        task_group.cancel_scope.cancel()
        return await task_group.__aexit__(exc_type, exc, tb)

    async def close(self) -> None:
        """Stop every server (the leases left become unusable)."""
        entries, self._entries = list(self._entries.values()), {}
        async with anyio.create_task_group() as stopping:
            for entry in entries:
                if entry.connection is not None:
                    stopping.start_soon(entry.connection.stop)

    def spawn(self, function: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``function`` in the pool's task group (work that must outlive the task asking for it)."""
        if self._task_group is not None:
            self._task_group.start_soon(function)

    # -- references ------------------------------------------------------------------------------

    async def acquire(self, spec: ServerSpec, principal: str | None = None) -> Lease:
        """A lease on the server for ``spec`` (and ``principal``), started if it is not running.

        Raises:
            UpstreamUnavailable: it could not be started (the reference is not kept).
        """
        key = handle_key(spec, principal)
        entry = self._entries.get(key)
        if entry is None:
            failures, retry_at = self._backoff.pop(key, (0, 0.0))
            entry = self._entries[key] = _Entry(key, spec, failures=failures, retry_at=retry_at)
        entry.refs += 1
        try:
            await self.live(entry)
        except BaseException:
            await self._drop_ref(entry)
            raise
        return Lease(self, entry)

    async def release(self, lease: Lease) -> None:
        """Give a lease back; the server stops when its last lease is released. Idempotent."""
        if lease.released:
            return
        lease.released = True
        await self._drop_ref(lease.entry)

    async def _drop_ref(self, entry: _Entry) -> None:
        entry.refs -= 1
        if entry.refs > 0:
            return
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]
            if entry.failures:
                self._backoff[entry.key] = (entry.failures, entry.retry_at)
        async with entry.lock:
            connection, entry.connection = entry.connection, None
            if connection is not None:
                await connection.stop()

    # -- liveness --------------------------------------------------------------------------------

    async def live(self, entry: _Entry) -> Connection:
        """The entry's live connection, starting one if there is none or the last one died.

        Raises:
            UpstreamUnavailable: the start failed, or the server is backing off after failures.
        """
        connection = entry.connection
        if connection is not None and connection.alive:
            return connection
        async with entry.lock:
            connection = entry.connection
            if connection is not None and connection.alive:
                return connection
            if connection is not None:
                await self._bury(entry, connection)
            return await self._start(entry)

    async def _bury(self, entry: _Entry, connection: Connection) -> None:
        entry.connection = None
        await connection.stop()  # already ended: this waits for the child to be reaped
        if connection.failure or anyio.current_time() - connection.started_at < STABLE_SECONDS:
            self._failed(entry)
        logger.warning("Upstream %r went away; starting it again", entry.spec.name)

    async def _start(self, entry: _Entry) -> Connection:
        now = anyio.current_time()
        if entry.refs <= 0 or self._task_group is None:
            raise UpstreamUnavailable(entry.spec.name, f"upstream {entry.spec.name!r} is no longer in use")
        if now < entry.retry_at:
            wait = entry.retry_at - now
            raise UpstreamUnavailable(
                entry.spec.name,
                f"upstream {entry.spec.name!r} failed {entry.failures} time(s) in a row; next try in {wait:.1f}s",
            )
        connection = Connection(
            entry.spec,
            self.redactor,
            log_dir=self.log_dir,
            on_tools_changed=entry.tools_changed,
            max_message_bytes=self.max_message_bytes,
            stats=entry.stats,
        )
        try:
            await connection.start(self._task_group)
        except UpstreamUnavailable as exc:
            self._failed(entry)
            entry.error = exc.public  # the full message goes to the log and to the caller's error
            raise
        entry.error = ""
        entry.connection = connection
        entry.starts += 1
        if entry.starts > 1:
            entry.tools_changed()  # a fresh process may serve other tools than the one it replaces
        return connection

    def _failed(self, entry: _Entry) -> None:
        entry.failures += 1
        entry.retry_at = anyio.current_time() + backoff_delay(entry.failures, self.backoff_base, self.backoff_max)

    def status(self, *, name_callers: bool = True) -> dict[str, dict[str, Any]]:
        """Per running key (by server name): references, whether connected, consecutive failures,
        what it sent that could not be used (``wire``) and, while it is down, why (``error``: the
        public form, without the command or its stderr, which are in the log).

        A server run per caller has a key per caller (``name@principal``); with ``name_callers``
        off (for an open route: who uses the service is not for anyone to read) its handles are
        one ``per_caller`` entry in the server's, with ``callers`` (how many run) and ``connected``
        counting those up, the others summed, and the error of one that is down.
        """
        report: dict[str, dict[str, Any]] = {}
        merged: dict[str, dict[str, Any]] = {}
        for entry in self._entries.values():
            connection = entry.connection
            alive = connection is not None and connection.alive
            error = connection.failure_public if connection is not None and not alive else entry.error
            per_caller = entry.key[1] is not None
            if per_caller and not name_callers:
                _merge_caller(merged.setdefault(entry.spec.name, _no_callers()), entry, alive, error)
                continue
            name = f"{entry.spec.name}@{entry.key[1]}" if per_caller else entry.spec.name
            report[name] = {"refs": entry.refs, "connected": alive, "failures": entry.failures}
            report[name]["wire"] = entry.stats.as_dict()
            if error:
                report[name]["error"] = error
        for name, callers in merged.items():
            report.setdefault(name, {})["per_caller"] = callers
        return report


def _no_callers() -> dict[str, Any]:
    return {"callers": 0, "connected": 0, "refs": 0, "failures": 0, "wire": {}}


def _merge_caller(merged: dict[str, Any], entry: _Entry, alive: bool, error: str | None) -> None:
    merged["callers"] += 1
    merged["connected"] += int(alive)
    merged["refs"] += entry.refs
    merged["failures"] += entry.failures
    for kind, count in entry.stats.as_dict().items():
        merged["wire"][kind] = merged["wire"].get(kind, 0) + count
    if error:
        merged.setdefault("error", error)


@dataclass(eq=False)
class Lease:
    """One reference to a running upstream; calls always go to its current live connection."""

    pool: UpstreamPool
    entry: _Entry
    released: bool = False

    @property
    def spec(self) -> ServerSpec:
        return self.entry.spec

    async def connection(self) -> Connection:
        if self.released:
            raise UpstreamUnavailable(self.spec.name, f"lease on upstream {self.spec.name!r} was released")
        return await self.pool.live(self.entry)

    async def list_tools(self) -> list[types.Tool]:
        return await self._once_more(lambda connection: connection.list_tools(), repeatable=True)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: ProgressFnT | None = None,
        asker: Asker | None = None,
        repeatable: bool = False,
    ) -> types.CallToolResult:
        """Call ``name`` on the live connection.

        ``repeatable``: the tool is read-only or idempotent, so a call whose connection was
        lost (the server died under it, perhaps before we noticed) may be sent again.
        """
        return await self._once_more(
            lambda connection: connection.call_tool(name, arguments, progress=progress, asker=asker),
            repeatable=repeatable,
        )

    async def _once_more(self, operation: Callable[[Connection], Awaitable[T]], *, repeatable: bool) -> T:
        # A server that restarted answers "session not found" before running anything, so that
        # request is always safe to send again on a fresh session. A lost connection may have
        # run the request first: only a repeatable one is sent again. Nothing else is retried.
        try:
            result = await operation(await self.connection())
        except SessionLost:
            logger.info("Upstream %r lost our session; initialising again", self.spec.name)
            result = await operation(await self.connection())
        except ConnectionLost:
            if not repeatable:
                raise
            logger.info("Upstream %r went away under a repeatable request; sending it again", self.spec.name)
            result = await operation(await self.connection())
        self.entry.failures = 0
        return result

    def on_tools_changed(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` when the server announces a tool list change (or was restarted)."""
        self.entry.listeners.append(listener)

        def remove() -> None:
            if listener in self.entry.listeners:
                self.entry.listeners.remove(listener)

        return remove
