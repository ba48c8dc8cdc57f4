"""Running tasks: the work in the serving task group, its record kept up to date, cancellation, leases.

``TaskRunner.start`` records a new task, then runs the call in the task group the bridge's
service opened (``serving()``), through the same ``CallRouter.call`` as any call (scopes, rate
limit, concurrency share, ACL, approval, tracing). The record follows the run: progress,
then ``completed`` (the tool's result, an error result included), ``failed`` (the call never
produced a result: refused, or it needed to ask the client) or ``cancelled``.

With a shared store, the replica running a task renews its lease every ``lease / 3`` seconds and
acts on cancellations asked on other replicas. A replica that dies stops renewing: once the
lease is past, every replica answers the task as ``failed`` (``REPLICA_GONE``); the work is lost.
A task that ends while the store is away keeps its final record here and writes it once the
store is back (also where Redis restarted empty); back after the lease, it writes ``failed``
(``STORE_AWAY``) instead, as the other replicas will have answered meanwhile.

``end_of`` lets ``tasks/result`` sleep until a task ends: an event per waited task, set when
the task ends here, or when the store says another replica ended it (``watch_ends``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from apcore_mcp.calls.context import CallContext, Era, InputKind, LogLevel
from apcore_mcp.calls.router import CallOutcome, CallRouter, wire_result
from apcore_mcp.tasks.records import (
    TaskRecord,
    TaskStatus,
    TaskStore,
    TaskStoreFull,
    TaskStoreUnavailable,
    owner_key,
)

logger = logging.getLogger(__name__)

LEASE_SECONDS = 15.0
REPLICA_GONE = "The server running this task stopped before it finished; the work was lost. Call the tool again."
CANNOT_ASK = "This tool asks the client for input, which a task cannot do; call it without a task"
STORE_AWAY = (
    "The task ended while the task store (Redis) was unreachable; its result was not kept. Call the tool again."
)
STOPPED = "The task's work ended before producing a result (the server stopped, or an internal error)"
INTERNAL = -32603


class TaskPeer:
    """The client as a task's work sees it: progress goes into the record; nothing can be asked.

    An approval-gated module run as a task is therefore refused (approval fails closed).
    """

    def __init__(self, era: Era, on_progress: Callable[[float, float | None, str | None], Any]) -> None:
        self._era = era
        self._on_progress = on_progress
        self.request_state: str | None = None

    @property
    def era(self) -> Era:
        return self._era

    def can_ask(self, kind: InputKind) -> bool:
        return False

    @property
    def back_channel(self) -> bool:
        return False

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._on_progress(progress, total, message)

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {}

    async def log(self, level: LogLevel, data: object, logger_name: str | None) -> None:
        return None

    async def spend_state(self, spend: Callable[[str], Any]) -> bool:
        return False


def _no_result(outcome: CallOutcome) -> bool:
    """Refused before running, or cut off by the server stopping (``CallRouter.cancel_all``): no tool result."""
    return outcome.refusal is not None or (outcome.error is not None and outcome.error.kind == "cancelled")


@dataclass
class _Running:
    call: CallContext
    owner: str
    record: TaskRecord
    """As created: the base of the final record when the store cannot give the current one."""
    lease_until: float | None
    """The lease the store last accepted: the other replicas answer ``failed`` past it."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancelled: bool = False
    """Cancelled by ``tasks/cancel`` (not by the service stopping, which fails the task)."""


class TaskRunner:
    """Starts, follows and cancels the tasks of one served bridge (see the module doc)."""

    def __init__(
        self,
        router: CallRouter,
        store: TaskStore,
        *,
        ttl: float,
        max_per_caller: int,
        poll_ms: int = 1000,
        lease: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.router = router
        self.store = store
        self.ttl = ttl
        self.poll_ms = poll_ms
        self.lease = lease
        self._clock = clock
        self._group: TaskGroup | None = None
        self.max_per_caller = max_per_caller
        """Tasks one caller may have running here, so that no caller takes every record."""
        self._running: dict[str, _Running] = {}
        self._ends: dict[str, tuple[anyio.Event, int]] = {}  # per task someone waits on: its event, its waiters

    @property
    def serving(self) -> bool:
        return self._group is not None

    @contextlib.asynccontextmanager
    async def served(self) -> AsyncIterator[None]:
        """While entered, tasks may start; leaving cancels the work still running (its tasks end ``cancelled``)."""
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._renew_leases)
            group.start_soon(self.store.watch_ends, self._ended)
            try:
                yield
            finally:
                self._group = None
                for running in self._running.values():
                    running.call.cancel_token.cancel()
                group.cancel_scope.cancel()

    @contextlib.contextmanager
    def using(self, store: TaskStore) -> Any:
        """Keep records in ``store`` while inside (the replicas' Redis while linked)."""
        own, self.store = self.store, store
        try:
            yield
        finally:
            self.store = own

    def ttl_ms(self, requested: int | None) -> int:
        """The retention of a new task: the client's request, never above the ``task_ttl`` setting."""
        ceiling = math.ceil(self.ttl * 1000)
        return ceiling if requested is None or requested <= 0 else min(int(requested), ceiling)

    async def start(
        self, tool: str, arguments: dict[str, Any] | None, call: CallContext, *, ttl_ms: int | None = None
    ) -> TaskRecord:
        """Record a task and start its work; the record is in the store before this returns.

        Raises:
            TaskStoreFull: no room for another task.
            TaskStoreUnavailable: the shared store is unreachable.
            RuntimeError: the bridge is not being served (no task group to run in).
        """
        group = self._group
        if group is None:
            raise RuntimeError("tasks run only while the bridge is served")
        owner = owner_key(call.caller)
        if sum(running.owner == owner for running in self._running.values()) >= self.max_per_caller:
            limit = self.max_per_caller
            raise TaskStoreFull(f"this caller has reached its limit of {limit} running tasks; try again later")
        now = self._clock()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            owner=owner,
            tool=tool,
            ttl_ms=self.ttl_ms(ttl_ms),
            poll_ms=self.poll_ms,
            created_at=now,
            updated_at=now,
            lease_until=now + self.lease if self.store.shared else None,
        )
        running = self._running[record.task_id] = _Running(
            call, owner, record, record.lease_until
        )  # counted before the store's await
        try:
            await self.store.create(record)
        except BaseException:
            del self._running[record.task_id]
            raise
        call.peer = TaskPeer(call.era, lambda p, t, m: self._progress(record.task_id, p, t, m))
        call.meta = {}  # the request's progress token is the request's, not the task's
        call.release = None
        group.start_soon(self._work, record.task_id, tool, arguments, running)
        return record

    async def get(self, task_id: str, caller: str) -> TaskRecord | None:
        """The caller's task (``None``: no such task, or not theirs), as it stands now."""
        record = await self.store.get(task_id)
        if record is None or not secrets.compare_digest(record.owner, owner_key(caller)):
            return None
        if record.status == "working" and record.lease_until is not None and record.lease_until < self._clock():
            record.status, record.status_message = "failed", REPLICA_GONE
            record.error = {"code": INTERNAL, "message": REPLICA_GONE}
        return record

    async def cancel(self, record: TaskRecord) -> None:
        """Cancel the caller's task: its record says ``cancelled`` at once (a finished one stays as it
        is), and the work is stopped here, or by the replica running it, which reads the mark."""
        if record.terminal:
            return
        record.status, record.status_message, record.updated_at = "cancelled", "Cancelled", self._clock()
        record.lease_until = None
        await self.store.put(record)
        self._ended(record.task_id)
        if not self._stop(record.task_id):
            await self.store.request_cancel(record.task_id)

    @contextlib.contextmanager
    def end_of(self, task_id: str) -> Iterator[anyio.Event]:
        """An event set when the task ends here, or when the store says another replica ended it.

        Take it before looking at the task, so that no end falls between the look and the wait.
        """
        event, waiters = self._ends.get(task_id, (anyio.Event(), 0))
        self._ends[task_id] = (event, waiters + 1)
        try:
            yield event
        finally:
            kept = self._ends.get(task_id)
            if kept is not None and kept[0] is event:  # the last waiter out: nothing kept per task
                if kept[1] <= 1:
                    del self._ends[task_id]
                else:
                    self._ends[task_id] = (event, kept[1] - 1)

    def _ended(self, task_id: str) -> None:
        kept = self._ends.pop(task_id, None)
        if kept is not None:
            kept[0].set()

    def _stop(self, task_id: str) -> bool:
        running = self._running.get(task_id)
        if running is None:
            return False
        running.cancelled = True
        running.call.cancel_token.cancel()
        running.scope.cancel()
        return True

    async def _work(self, task_id: str, tool: str, arguments: dict[str, Any] | None, running: _Running) -> None:
        status: TaskStatus = "failed"
        outcome: CallOutcome | None = None
        try:
            with running.scope:
                outcome = await self.router.call(tool, arguments, running.call)
            if outcome is not None:
                status = "failed" if _no_result(outcome) else "completed"
        except Exception:
            logger.exception("Task of %s failed", tool)
            outcome = None
        finally:
            self._running.pop(task_id, None)
            if running.cancelled:
                status, outcome = "cancelled", None
            with anyio.CancelScope(shield=True):  # also when the service stops: the record says so
                await self._settle(running, status, outcome)

    async def _settle(self, running: _Running, status: TaskStatus, outcome: CallOutcome | None) -> None:
        # Unreachable or missing (a shared store restarted empty): the record as created is the base.
        record = await self._load(running.record.task_id) or TaskRecord.loads(running.record.dumps())
        if record.terminal:
            return
        record.status, record.updated_at, record.lease_until = status, self._clock(), None
        if status == "completed" and outcome is not None and (outcome.input_required or outcome.missing_capability):
            record.status, record.status_message = "failed", CANNOT_ASK
            record.error = {"code": INTERNAL, "message": CANNOT_ASK}
        elif status == "completed" and outcome is not None:
            record.result = wire_result(outcome)
        elif status == "failed":
            message = outcome.error.message if outcome is not None and outcome.error is not None else STOPPED
            record.status_message, record.error = message, {"code": INTERNAL, "message": message}
        else:
            record.status_message = "Cancelled"
        await self._finish(record, running.lease_until)

    async def _finish(self, record: TaskRecord, lease_until: float | None) -> None:
        """The final write; while the store is away, retried later (not here: this runs shielded)."""
        try:
            await self.store.finish(record)
        except TaskStoreFull:
            await self._save(record)  # the too-large path: the task reads failed
        except TaskStoreUnavailable:
            logger.warning(
                "Task store unreachable: task %s... ended; its record is written when it is back", record.task_id[:6]
            )
            if self._group is not None:
                self._group.start_soon(self._finish_later, record, lease_until)
            return
        self._ended(record.task_id)

    async def _finish_later(self, record: TaskRecord, lease_until: float | None) -> None:
        """Retry the final write until the record's retention ends (bounded), backing off to ``lease / 3``.

        Past the lease the store last accepted, other replicas may have answered ``failed`` already:
        the record then says ``failed`` too, so no one sees a task fail and later complete.
        """
        delay = 0.05
        while self._clock() < record.expires_at:
            await anyio.sleep(delay)
            delay = min(delay * 2, self.lease / 3)
            if lease_until is not None and self._clock() >= lease_until and record.status != "failed":
                record.result, record.status, record.status_message = None, "failed", STORE_AWAY
                record.error = {"code": INTERNAL, "message": STORE_AWAY}
            try:
                await self.store.finish(record)
            except TaskStoreUnavailable:
                continue
            except TaskStoreFull:
                await self._save(record)
            self._ended(record.task_id)
            return

    async def _progress(self, task_id: str, progress: float, total: float | None, message: str | None) -> None:
        record = await self._load(task_id)
        if record is None or record.terminal:
            return
        record.progress, record.total, record.updated_at = progress, total, self._clock()
        shown = f"{progress:g}" + (f"/{total:g}" if total is not None else "")
        record.status_message = f"{shown}: {message}"[:1024] if message else shown
        await self._save(record)

    async def _renew_leases(self) -> None:
        while True:  # ends with the serving task group, which cancels it
            await anyio.sleep(self.lease / 3)
            if not self.store.shared:
                continue
            for task_id, running in list(self._running.items()):
                with contextlib.suppress(TaskStoreUnavailable, TaskStoreFull):
                    if await self.store.cancel_requested(task_id):
                        self._stop(task_id)
                        continue
                    record = await self.store.get(task_id)
                    if record is not None and not record.terminal:
                        record.lease_until = self._clock() + self.lease
                        await self.store.put(record)
                        running.lease_until = record.lease_until

    async def _load(self, task_id: str) -> TaskRecord | None:
        try:
            return await self.store.get(task_id)
        except TaskStoreUnavailable:
            logger.warning("Task store unreachable: task %s... not updated", task_id[:6])
            return None

    async def _save(self, record: TaskRecord) -> None:
        try:
            await self.store.put(record)
        except TaskStoreFull:
            record.result, record.status = None, "failed"
            record.status_message = "The task's result is too large to keep"
            record.error = {"code": INTERNAL, "message": record.status_message}
            with contextlib.suppress(TaskStoreFull, TaskStoreUnavailable):
                await self.store.put(record)
        except TaskStoreUnavailable:
            logger.warning("Task store unreachable: task %s... not updated", record.task_id[:6])
