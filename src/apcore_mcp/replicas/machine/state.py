"""What one worker shares with the other workers of its machine, built from its settings.

The same surface as ``replicas.shared.SharedState`` (the Redis one), so the bridge's service
treats both alike: rate-limit buckets, task records and the record of used approvals, here in
the workers' SQLite store, and the approvals a person decides
(any worker's page decides them). Nothing to run and nothing degraded: the store is a local file.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from apcore import Executor

from apcore_mcp.calls.approval import MCPApprovalHandler, mcp_approval_handler
from apcore_mcp.calls.limits import BucketStore
from apcore_mcp.calls.person_approval import ApprovalDesk
from apcore_mcp.calls.used_approvals import UsedApprovals
from apcore_mcp.replicas.machine.approvals import MachineUsedApprovals
from apcore_mcp.replicas.machine.buckets import MachineBuckets
from apcore_mcp.replicas.machine.person_approvals import MachineApprovalDesk
from apcore_mcp.replicas.machine.store import MachineStore
from apcore_mcp.replicas.machine.tasks import MachineTaskStore
from apcore_mcp.settings import Settings

PERSON_APPROVALS_SECRET = "person_approvals"  # noqa: S105 - the name of a secret, not one


@dataclass
class MachineState:
    """The workers' store while a bridge is served."""

    store: MachineStore
    settings: Settings
    _approvals: tuple[MCPApprovalHandler, UsedApprovals, ApprovalDesk] | None = field(default=None, repr=False)

    async def run(self) -> None:
        await anyio.sleep_forever()

    def buckets(self, fallback: BucketStore | None = None) -> MachineBuckets:
        """One bucket per caller for the machine (``fallback``'s while the store fails)."""
        return MachineBuckets(self.store, fallback)

    def tasks(self, max_record_bytes: int) -> MachineTaskStore:
        return MachineTaskStore(self.store, max_count=self.settings.task_max_count, max_bytes=max_record_bytes)

    def share_approvals(self, handler: MCPApprovalHandler) -> None:
        """Record ``handler``'s used approvals and pending person approvals in the store: a state used
        on one worker is refused by all, and a person's link works on any worker."""
        own = handler.desk
        self._approvals = (handler, handler.used, own)
        handler.used = MachineUsedApprovals(self.store)
        secret = self.store.shared_secret(PERSON_APPROVALS_SECRET, lambda: secrets.token_urlsafe(32))
        desk = MachineApprovalDesk(
            self.store, secret=secret.encode(), max_pending=own.max_pending, max_per_caller=own.max_per_caller
        )
        desk.page_served = own.page_served
        handler.desk = desk

    async def problems(self) -> dict[str, str]:
        return {}

    async def aclose(self) -> None:
        if self._approvals is not None:  # the handler may outlive this app (a user's Executor)
            handler, used, desk = self._approvals
            handler.used, handler.desk, self._approvals = used, desk, None
        self.store.close()


def machine_state(settings: Settings, executor: Executor, directory: Path) -> MachineState:
    """The workers' state in ``directory``, with ``executor``'s used approvals recorded there."""
    state = MachineState(MachineStore.open(directory), settings)
    if (handler := mcp_approval_handler(executor)) is not None:
        state.share_approvals(handler)
    return state
