"""The record of used 2026-07-28 approvals in the workers' store: an approval grants once on the machine.

A claim deletes the digest's expired row, then inserts it unless present, in one write
transaction: of two workers claiming the same state at once exactly one inserts. Rows expire with
the state's lifetime. Full (``MAX_ENTRIES`` unexpired rows, as the in-process record) refuses new
approvals until some expire: forgetting one early would let its state be replayed. A store that
fails (locked past its busy timeout, a broken file) cannot tell either: both raise
``UsedApprovalsUnavailable``, and the approval is refused.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from apcore_mcp.calls.used_approvals import MAX_ENTRIES, UsedApprovalsUnavailable
from apcore_mcp.replicas.machine.store import MachineStore


class MachineUsedApprovals:
    """``UsedApprovals`` in the workers' store."""

    def __init__(
        self, store: MachineStore, *, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.max_entries = max_entries
        self._clock = clock

    async def claim(self, digest: bytes, ttl: float) -> bool:
        try:
            return self._claim(digest, ttl)
        except sqlite3.Error as exc:
            raise UsedApprovalsUnavailable(f"the workers' store failed: {exc}") from exc

    def _claim(self, digest: bytes, ttl: float) -> bool:
        with self.store.writing() as db:
            now = self._clock()
            db.execute("DELETE FROM approvals WHERE expires <= ?", (now,))
            if self.store.one("SELECT count(*) FROM approvals") >= self.max_entries:
                raise UsedApprovalsUnavailable(f"{self.max_entries} approvals were granted within a state's lifetime")
            inserted = db.execute(
                "INSERT OR IGNORE INTO approvals (digest, expires) VALUES (?, ?)", (digest, now + ttl)
            ).rowcount
        return inserted == 1
