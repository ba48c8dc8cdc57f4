"""Whole results kept for a short time behind a ``result://`` link, readable only by their caller.

When ``result_overflow_links`` is on, a result cut to its budget is kept here whole and the cut
result carries a ``resource_link`` to it. Only the caller that made the call may read it
(``resources/read``): anyone else is told "Resource not found", as for a link that never
existed. The store is bounded in count and bytes and each entry expires; past a bound, the
oldest entries go first. A result larger than the whole store is not kept (no link is sent).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

RESULT_SCHEME = "result://"
DEFAULT_TTL = 300.0
DEFAULT_MAX_COUNT = 256
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Kept:
    owner: bytes
    text: str
    size: int
    expires: float


class KeptResults:
    """Whole results by random id, each with its owner's digest, in insertion order (the oldest first)."""

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # results are cut off the event loop when large

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    def keep(self, owner: str, text: str) -> str | None:
        """Keep ``text`` (a whole result as JSON) for ``owner``: its URI, or ``None`` when larger than the store."""
        size = len(text.encode("utf-8"))
        if size > self.max_bytes or self.max_count < 1:
            return None
        uri = RESULT_SCHEME + secrets.token_urlsafe(18)
        with self._lock:
            now = self._clock()
            self._expire(now)
            while self._entries and (len(self._entries) >= self.max_count or self._bytes + size > self.max_bytes):
                self._drop(next(iter(self._entries)))
            self._entries[uri] = _Kept(_digest(owner), text, size, now + self.ttl)
            self._bytes += size
        return uri

    def read(self, owner: str, uri: str) -> str | None:
        """The kept text at ``uri`` when ``owner`` kept it and it has not expired; else ``None``."""
        with self._lock:
            self._expire(self._clock())
            kept = self._entries.get(uri)
        if kept is None or not hmac.compare_digest(kept.owner, _digest(owner)):
            return None
        return kept.text

    def _expire(self, now: float) -> None:
        while self._entries:
            uri, kept = next(iter(self._entries.items()))
            if kept.expires > now:
                return
            self._drop(uri)

    def _drop(self, uri: str) -> None:
        kept = self._entries.pop(uri)
        self._bytes -= kept.size


def _digest(owner: str) -> bytes:
    """What an entry stores of its owner: a digest, never the key itself (an address, a subject)."""
    return hashlib.sha256(owner.encode()).digest()
