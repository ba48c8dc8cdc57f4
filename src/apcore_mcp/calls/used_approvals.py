"""Which 2026-07-28 ``requestState`` values have already granted an approval: each grants one.

In the 2026-07-28 era a "yes" travels in a retried request with the sealed ``requestState`` of
the round that asked. The seal stops tampering, not repetition: the same state and answer sent
again would approve the call again until the state expires. So the approval handler records
each state that grants an approval (a SHA-256 digest of the verified state, never the state)
for as long as a state can live (``Settings.request_state_ttl``), and refuses one it finds.

``MemoryUsedApprovals`` keeps the record in this process (one replica). With ``redis_url`` the
replicas share one (``apcore_mcp.replicas.used_approvals.RedisUsedApprovals``), so a state used
on one replica is refused by the others. Whenever the record cannot tell (memory full, Redis
away) ``claim`` raises ``UsedApprovalsUnavailable`` and the approval is refused: failing closed.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
import time
from collections.abc import Callable
from typing import Protocol

MAX_ENTRIES = 65_536
"""Approvals a ``MemoryUsedApprovals`` remembers at once (about 200 bytes each: 13 MiB at most)."""


class UsedApprovalsUnavailable(Exception):
    """The record cannot say whether a state was used (full, or its store unreachable)."""


class UsedApprovals(Protocol):
    """The record of states that granted an approval: one grant each."""

    async def claim(self, digest: bytes, ttl: float) -> bool:
        """Mark ``digest`` used for ``ttl`` seconds, atomically: ``True`` if it was not used yet.

        Raises:
            UsedApprovalsUnavailable: the record cannot tell (the caller refuses the approval).
        """
        ...  # pragma: no cover - a Protocol


def state_digest(state: str) -> bytes:
    """The fixed-size name of a verified ``requestState`` in a record (the state itself is never kept)."""
    return hashlib.sha256(state.encode("utf-8", "surrogatepass")).digest()


class MemoryUsedApprovals:
    """``UsedApprovals`` in this process, bounded: expired entries are dropped, a full record refuses.

    Full means ``max_entries`` approvals granted within one state lifetime. Forgetting one early
    would let its state be replayed, so a full record refuses new approvals until entries expire.
    """

    def __init__(self, *, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries!r}")
        self.max_entries = max_entries
        self._clock = clock
        self._expiry: dict[bytes, float] = {}
        self._by_expiry: list[tuple[float, bytes]] = []  # a heap: the next entry to expire first
        self._lock = threading.Lock()  # handlers of executors driven from several threads share it

    def __len__(self) -> int:
        """Entries not expired yet."""
        with self._lock:
            self._drop_expired(self._clock())
            return len(self._expiry)

    async def claim(self, digest: bytes, ttl: float) -> bool:
        with self._lock:
            now = self._clock()
            self._drop_expired(now)
            if digest in self._expiry:
                return False
            if len(self._expiry) >= self.max_entries:
                raise UsedApprovalsUnavailable(f"{self.max_entries} approvals granted within one state lifetime")
            expires = now + ttl
            self._expiry[digest] = expires
            heapq.heappush(self._by_expiry, (expires, digest))
            return True

    def _drop_expired(self, now: float) -> None:
        while self._by_expiry and self._by_expiry[0][0] <= now:
            _, digest = heapq.heappop(self._by_expiry)
            del self._expiry[digest]
