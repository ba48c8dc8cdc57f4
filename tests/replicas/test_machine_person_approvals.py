"""Person approvals in the workers' store: two desks on one database, as two workers have.

Each desk has its own connection (as each worker process does); what one opens, claims or
decides the other sees, and the caps are counted over both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.calls.person_approval import PendingApproval
from apcore_mcp.replicas.machine.person_approvals import MachineApprovalDesk
from apcore_mcp.replicas.machine.store import MachineStore

SECRET = b"s" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def desks(tmp_path: Path, clock: Clock) -> Iterator[tuple[MachineApprovalDesk, MachineApprovalDesk]]:
    stores = [MachineStore.open(tmp_path), MachineStore.open(tmp_path)]
    try:
        yield (
            MachineApprovalDesk(stores[0], secret=SECRET, max_pending=3, max_per_caller=2, clock=clock),
            MachineApprovalDesk(stores[1], secret=SECRET, max_pending=3, max_per_caller=2, clock=clock),
        )
    finally:
        for store in stores:
            store.close()


def open_one(desk: MachineApprovalDesk, asked_by: str, ttl: float = 60.0) -> PendingApproval | None:
    return desk.open(tool="db.purge", digest="d", asked_by=asked_by, arguments="{}", ttl=ttl)


async def test_the_caps_count_every_workers_approvals(desks: tuple[MachineApprovalDesk, MachineApprovalDesk]) -> None:
    one, other = desks
    assert open_one(one, "alice") is not None and open_one(other, "alice") is not None
    assert open_one(one, "alice") is None  # alice's share, over both workers
    assert open_one(other, "bob") is not None
    assert open_one(one, "carol") is None  # the machine's cap
    assert len(one.pending()) == len(other.pending()) == 3


async def test_a_decision_on_one_worker_reaches_the_call_waiting_on_another(
    desks: tuple[MachineApprovalDesk, MachineApprovalDesk],
) -> None:
    asking, page = desks
    pending = open_one(asking, "alice")
    assert pending is not None
    token = asking.token(pending)
    assert page.form_key(token) == asking.form_key(token)
    assert page.decide(token, approve=True, decided_by="ops", how="approval page") is not None
    assert page.decide(token, approve=False, decided_by="ops", how="approval page") is None  # decided once
    assert await asking.wait(pending, 5.0) == "approved"
    assert (pending.decided_by, pending.how) == ("ops", "approval page")
    assert page.find(token) is None and asking.pending() == []  # closed: the link is spent


async def test_one_claim_across_workers_and_forged_or_expired_links_decide_nothing(
    desks: tuple[MachineApprovalDesk, MachineApprovalDesk], clock: Clock
) -> None:
    one, other = desks
    pending = open_one(one, "alice", ttl=10.0)
    assert pending is not None
    one.release(pending)
    assert other.claim(pending.id) is not None
    assert one.claim(pending.id) is None
    token = one.token(pending)
    assert other.find(token[:-2] + "xx") is None
    clock.now += 11.0
    assert other.find(token) is None
    assert other.decide(token, approve=True, decided_by="ops", how="page") is None
