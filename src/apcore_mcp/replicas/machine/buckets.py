"""Rate-limit token buckets in the workers' store: one bucket per caller for the whole machine.

The same bucket as ``calls.limits.MemoryBuckets`` and ``replicas.buckets.RedisBuckets``: ``burst``
tokens, refilled at ``rate`` per second, one taken per call. Read, refill and take happen in one
write transaction, so two workers never both take the last token. The clock is
``time.monotonic``: on Linux it is the system's (``CLOCK_MONOTONIC``), the same in every process
of the machine, and no wall-clock step can refill or drain a bucket. A caller's key is hashed
(no identity in the file); a bucket full again is deleted, and at most ``MAX_KEYS`` are kept
(past that the least recently used go first: a dropped bucket is a full one, as in memory).

A store that fails (locked past its busy timeout, a broken file) hands the take to ``fallback``
(this worker's own buckets, so each worker then allows the full rate, as replicas do without
Redis) with a WARNING once a minute; with no fallback the error is raised.
"""

from __future__ import annotations

import hashlib
import logging
import math
import sqlite3
import time
from collections.abc import Callable

from apcore_mcp._log_throttle import LogThrottle
from apcore_mcp.calls.limits import BucketStore
from apcore_mcp.replicas.machine.store import MachineStore

logger = logging.getLogger(__name__)
_throttle = LogThrottle(logger)

MAX_KEYS = 100_000
PRUNE_SECONDS = 10.0


def bucket_key(key: str) -> str:
    """A caller's bucket's name, hashed as ``replicas.buckets`` does (no identity kept, length bounded)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class MachineBuckets:
    """``BucketStore`` in the workers' store."""

    def __init__(
        self, store: MachineStore, fallback: BucketStore | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.fallback = fallback
        self._clock = clock
        self._prune_at = 0.0

    async def take(self, key: str, rate: float, burst: int, now: float) -> float:
        if not (rate > 0 and math.isfinite(rate)) or burst < 1:
            raise ValueError(f"rate must be positive and burst at least 1, got rate={rate!r} burst={burst!r}")
        try:
            return self._take(bucket_key(key), rate, burst)
        except sqlite3.Error as exc:
            if self.fallback is None:
                raise
            _throttle.log(
                logging.WARNING,
                "failed",
                "The workers' store failed (%s): this worker counts rate limits on its own",
                exc,
            )
        return await self.fallback.take(key, rate, burst, now)

    def _take(self, hashed: str, rate: float, burst: int) -> float:
        with self.store.writing() as db:
            at = self._clock()  # read inside the lock: the order of takes is the order of their clocks
            row = db.execute("SELECT tokens, at FROM buckets WHERE key = ?", (hashed,)).fetchone()
            tokens, since = (float(burst), at) if row is None else (float(row[0]), float(row[1]))
            tokens = min(float(burst), tokens + max(0.0, at - since) * rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / rate
            expires = at + (burst - tokens) / rate
            db.execute(
                "INSERT INTO buckets (key, tokens, at, expires) VALUES (?, ?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET tokens = excluded.tokens, at = excluded.at, expires = excluded.expires",
                (hashed, tokens, at, expires),
            )
            if at >= self._prune_at:
                self._prune_at = at + PRUNE_SECONDS
                db.execute("DELETE FROM buckets WHERE expires < ?", (at,))
                db.execute(
                    "DELETE FROM buckets WHERE key IN (SELECT key FROM buckets ORDER BY at DESC LIMIT -1 OFFSET ?)",
                    (MAX_KEYS,),
                )
        return wait
