"""What one replica shares with the others, built from its settings (only with ``redis_url``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from apcore import Executor

from apcore_mcp.calls.approval import MCPApprovalHandler, mcp_approval_handler
from apcore_mcp.calls.limits import BucketStore
from apcore_mcp.calls.used_approvals import UsedApprovals
from apcore_mcp.mcp.notifier import ListChangedNotifier, change_of
from apcore_mcp.replicas.audit import RedisAuditLog
from apcore_mcp.replicas.broadcast import ChangeBroadcaster
from apcore_mcp.replicas.buckets import RedisBuckets
from apcore_mcp.replicas.link import RedisLink
from apcore_mcp.replicas.tasks import RedisTaskStore
from apcore_mcp.replicas.used_approvals import RedisUsedApprovals
from apcore_mcp.settings import Settings
from apcore_mcp.settings.replicas import UNSHARED_KEYS
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.records import ToolRecord

logger = logging.getLogger(__name__)


@dataclass
class SharedState:
    """The replica's Redis link and what runs over it, for the app's lifespan."""

    link: RedisLink
    broadcaster: ChangeBroadcaster | None = None
    _unsubscribe: Callable[[], None] | None = field(default=None, repr=False)
    _approvals: tuple[MCPApprovalHandler, UsedApprovals] | None = field(default=None, repr=False)

    async def run(self) -> None:
        """Serve the shared state until cancelled (nothing to run without broadcasting)."""
        if self.broadcaster is not None:
            await self.broadcaster.run()
        else:
            await anyio.sleep_forever()

    def buckets(self, fallback: BucketStore | None = None) -> RedisBuckets:
        """Rate-limit buckets shared by the replicas (``fallback`` while Redis is away)."""
        return RedisBuckets(self.link, fallback)

    def tasks(self, max_record_bytes: int) -> RedisTaskStore:
        """Task records every replica reads (``tasks/get`` answers on any of them)."""
        return RedisTaskStore(self.link, max_record_bytes)

    def share_approvals(self, handler: MCPApprovalHandler, audit_retention: float = 0.0) -> None:
        """Record ``handler``'s used approvals in Redis, so a state used on one replica is refused by all;
        with ``audit_retention``, keep its audit records there that long."""
        self._approvals = (handler, handler.used)
        handler.used = RedisUsedApprovals(self.link)
        if audit_retention > 0:
            handler.audit_store = RedisAuditLog(self.link, audit_retention)

    async def problems(self) -> dict[str, str]:
        """Degradations ``/ready`` reports: ``{"redis": "unreachable (...); what is done instead"}``.

        Redis is probed first (bounded, at most once a second: ``RedisLink.probe``).
        """
        await self.link.probe()
        problem = self.link.problem()
        return {"redis": problem} if problem else {}

    async def aclose(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._approvals is not None:  # the handler outlives this app (a user's Executor)
            handler, own = self._approvals
            handler.used, handler.audit_store, self._approvals = own, None, None
        await self.link.aclose()


def shared_state(
    settings: Settings, executor: Executor, notifier: ListChangedNotifier, catalog: ToolCatalog
) -> SharedState | None:
    """The shared state ``settings`` ask for, or ``None`` without ``redis_url``: ``executor``'s used
    approvals recorded in Redis, and ``catalog``'s changes broadcast to (and from) the replicas."""
    if settings.redis_url is None:
        return None
    if not settings.request_state_keys:
        logger.warning(UNSHARED_KEYS)
    state = SharedState(RedisLink(settings.redis_url, settings.redis_prefix))
    if (handler := mcp_approval_handler(executor)) is not None:
        state.share_approvals(handler, settings.audit_retention)
    if settings.broadcast_changes:
        broadcaster = ChangeBroadcaster(state.link, notifier)

        def relay(record: ToolRecord) -> None:
            broadcaster.local_change(change_of(record))

        state.broadcaster = broadcaster
        state._unsubscribe = catalog.subscribe(relay)
    return state
