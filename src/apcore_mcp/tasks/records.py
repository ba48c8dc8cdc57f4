"""Long-running modules as MCP tasks: which tools run as tasks, the task record, and where records live.

A module opts in with ``ModuleAnnotations(extra={"mcp.task_support": "optional"})`` (or
``"required"``): a client that can take a task gets one at once and polls it; others run it
as an ordinary call (``optional``) or are refused (``required``). The record of a task is kept
in a ``TaskStore``: this process's memory (``task_store.MemoryTaskStore``) or Redis shared by
the replicas (``replicas.tasks.RedisTaskStore``). A record names its owner, the caller key that
started it; anyone else is told the task does not exist.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 extension identifier (SEP-2663), advertised under ``capabilities.extensions``."""
TASK_SUPPORT_KEY = "mcp.task_support"
"""The ``ModuleAnnotations.extra`` key marking a module long-running: ``"optional"`` or ``"required"``."""

TaskSupport = Literal["forbidden", "optional", "required"]
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


class TaskStoreFull(Exception):
    """The store holds as many tasks (or bytes) as it may: no new task until some expire."""


class TaskStoreUnavailable(Exception):
    """The shared store (Redis) cannot be reached."""


def task_support(annotations: object) -> TaskSupport:
    """What a module's annotations say about running it as a task (``forbidden`` when silent)."""
    extra = getattr(annotations, "extra", None)
    value = extra.get(TASK_SUPPORT_KEY) if isinstance(extra, Mapping) else None
    return value if value in ("optional", "required") else "forbidden"


def requested_ttl(value: object) -> int | None:
    """A client's requested retention in milliseconds (``None``: not asked), checked once for every era.

    Raises:
        ValueError: not a positive integer (``true`` is not 1, ``1.5`` and ``-1`` are no retention).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"task ttl must be a positive integer of milliseconds, not {json.dumps(value)[:32]}")
    return value


def owner_key(caller: str) -> str:
    """What a record stores of its owner: a digest of the caller key, never the key (an address, a subject)."""
    return hashlib.sha256(caller.encode()).hexdigest()


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task as the store keeps it (JSON in Redis); ``result`` is the tool's ``CallToolResult`` wire dict."""

    task_id: str
    owner: str
    tool: str
    ttl_ms: int
    poll_ms: int
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    lease_until: float | None = None
    """Shared stores: the running replica renews it while the work runs; past it, that replica is gone."""
    progress: float | None = None
    total: float | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_ms / 1000

    def dumps(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def loads(cls, data: bytes | str) -> TaskRecord:
        return cls(**json.loads(data))


class TaskStore(Protocol):
    """Where task records live; every method may raise ``TaskStoreUnavailable`` (a shared store)."""

    shared: bool
    """Whether other replicas read it (then the running replica renews a lease on its records)."""

    async def create(self, record: TaskRecord) -> None:
        """Keep a new record until it expires (``created_at + ttl_ms``).

        Raises:
            TaskStoreFull: no room for it.
        """
        ...  # pragma: no cover - a Protocol

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, or ``None`` when unknown or expired."""
        ...  # pragma: no cover

    async def put(self, record: TaskRecord) -> None:
        """Replace a record (its expiry stays the creation's); an expired record stays gone, and a
        finished one (completed, failed, cancelled) is final: a put over it does nothing.

        Raises:
            TaskStoreFull: the new version does not fit.
        """
        ...  # pragma: no cover

    async def finish(self, record: TaskRecord) -> None:
        """Write a task's final record: as ``put``, and also where the record went missing before its
        expiry (a shared store that restarted empty), so the task is not lost while its retention lasts.

        Raises:
            TaskStoreFull: the final version does not fit.
        """
        ...  # pragma: no cover

    async def watch_ends(self, on_end: Callable[[str], None]) -> None:
        """Call ``on_end(task_id)`` for tasks that other replicas finished or cancelled; runs until cancelled.

        Best effort (a message may be lost while the store is away): waiters also look again now and then.
        """
        ...  # pragma: no cover

    async def request_cancel(self, task_id: str) -> None:
        """Mark the task for cancellation (the replica running it acts on the mark)."""
        ...  # pragma: no cover

    async def cancel_requested(self, task_id: str) -> bool: ...  # pragma: no cover
