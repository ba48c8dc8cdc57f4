"""Limits on tool calls: who a limit counts against, a per-caller rate limit, a fairly shared concurrency cap.

``principal_key`` names the caller a per-caller limit (rate, sessions, share) is counted for.
The rate limit is a token bucket per caller whose storage is a small ``BucketStore``
Protocol, so a shared store (Redis, for replicas) can replace the in-memory one. The
concurrency cap refuses a call at once when too many run, instead of queueing it; and one
caller may hold only its share of it, so a single client cannot fill the cap and starve
the others.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from apcore_mcp.calls.principal import principal_of

LOCAL_PRINCIPAL = "local"
"""The caller of a transport with no network peer (stdio, in memory)."""

RATE_LIMITED = -32010
"""JSON-RPC error code of a tool call refused by the per-caller rate limit (``data.retryAfter`` in seconds)."""
OVERLOADED = -32011
"""JSON-RPC error code of a tool call refused because ``max_concurrent_calls`` calls are running,
or its caller already runs its share of them (``max_caller_share``)."""
TOO_MANY_SESSIONS = -32012
"""JSON-RPC error code (HTTP 429) of a new session refused because its caller holds ``max_sessions_per_caller``."""


def principal_key(scope: Mapping[str, Any] | None) -> str:
    """Who a per-caller limit counts against, from an ASGI scope (``None``: a local transport).

    With authentication on (``http/auth.py`` stores the ``Principal`` at ``PRINCIPAL_KEY``)
    it is the authenticated principal (issuer and subject); otherwise the client's IP address. Behind a reverse
    proxy that address is the proxy's unless uvicorn is told to trust its forwarded headers
    (``--forwarded-allow-ips``), which then puts the original client's address in the scope.
    """
    if scope is None:
        return LOCAL_PRINCIPAL
    principal = principal_of(scope)
    if principal is not None:  # the same principal whichever address it calls from
        return f"principal:{principal.issuer or ''}:{principal.identity.id}"
    client = scope.get("client")
    if client:
        return str(client[0])
    return LOCAL_PRINCIPAL


# -- the rate limit ---------------------------------------------------------------------------


class BucketStore(Protocol):
    """Token buckets by key. An implementation shared between replicas makes the limit global."""

    async def take(self, key: str, rate: float, burst: int, now: float) -> float:
        """Take one token from ``key``'s bucket (``burst`` tokens, refilled at ``rate`` per second).

        Returns 0.0 when a token was taken, else the seconds until one will be available.
        """
        ...  # pragma: no cover - a Protocol


class MemoryBuckets:
    """Buckets in this process, the least recently used dropped past ``max_keys`` (a dropped bucket is full)."""

    def __init__(self, max_keys: int = 100_000) -> None:
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    async def take(self, key: str, rate: float, burst: int, now: float) -> float:
        tokens, updated = self._buckets.pop(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - updated) * rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return wait


# -- admission --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call was not let in."""

    reason: Literal["rate_limited", "overloaded"]
    message: str
    retry_after: float | None = None

    @property
    def retry_after_header(self) -> str:
        """The ``Retry-After`` value: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after or 1.0)))

    @property
    def code(self) -> int:
        return RATE_LIMITED if self.reason == "rate_limited" else OVERLOADED


class CallLimits:
    """Admission of tool calls: at most ``max_concurrent`` at once, ``rate`` per second per caller.

    One caller holds at most ``max_caller_share`` of ``max_concurrent`` (at least one call):
    past it, the same refusal as a full server. ``acquire(caller)`` either admits a call (the
    caller must then ``release(caller)`` it) or returns the ``Refusal``. ``None`` disables a limit.
    """

    def __init__(
        self,
        *,
        rate: float | None = None,
        burst: int | None = None,
        max_concurrent: int | None = None,
        max_caller_share: float = 0.5,
        buckets: BucketStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else max(1, math.ceil(rate or 1))
        self.max_concurrent = max_concurrent
        self.caller_cap = caller_cap(max_concurrent, max_caller_share)
        self.buckets: BucketStore = buckets if buckets is not None else MemoryBuckets()
        self.clock = clock
        self.running = 0
        # Calls running per caller, only while the cap is on. A caller leaves at zero, so the
        # dict never holds more than ``max_concurrent`` keys.
        self._by_caller: dict[str, int] = {}

    @property
    def active(self) -> bool:
        return self.rate is not None or self.max_concurrent is not None

    def share(self, buckets: BucketStore) -> Callable[[], None]:
        """Count rates in ``buckets`` (the replicas' shared store) until the returned function restores ours."""
        previous, self.buckets = self.buckets, buckets

        def restore() -> None:
            self.buckets = previous

        return restore

    def running_for(self, caller: str) -> int:
        """How many admitted calls of ``caller`` are running now."""
        return self._by_caller.get(caller, 0)

    async def acquire(self, caller: str) -> Refusal | None:
        refusal = self._over_cap(caller)
        if refusal is not None:
            return refusal
        self._hold(caller)  # held across the store's await, so the cap cannot be overshot meanwhile
        if self.rate is None:
            return None
        try:
            wait = await self.buckets.take(caller, self.rate, self.burst, self.clock())
        except BaseException:  # cancelled (or the store failed) while held: not admitted
            self.release(caller)
            raise
        if wait > 0:
            self.release(caller)
            return Refusal("rate_limited", f"Rate limit exceeded; retry in {wait:.1f}s", wait)
        return None

    def release(self, caller: str) -> None:
        self.running -= 1
        if self.max_concurrent is None:
            return
        left = self._by_caller.get(caller, 0) - 1
        if left > 0:
            self._by_caller[caller] = left
        else:
            self._by_caller.pop(caller, None)

    def _over_cap(self, caller: str) -> Refusal | None:
        if self.max_concurrent is None:
            return None
        if self.running >= self.max_concurrent:
            return Refusal("overloaded", f"Server busy: {self.max_concurrent} calls are running; retry shortly", 1.0)
        if self._by_caller.get(caller, 0) >= self.caller_cap:
            message = f"Server busy: {self.caller_cap} of your calls are running (your share); retry shortly"
            return Refusal("overloaded", message, 1.0)
        return None

    def _hold(self, caller: str) -> None:
        self.running += 1
        if self.max_concurrent is not None:
            self._by_caller[caller] = self._by_caller.get(caller, 0) + 1


def caller_cap(max_concurrent: int | None, share: float) -> int:
    """The most calls one caller may run at once: ``share`` of ``max_concurrent``, at least one (0: no cap)."""
    if max_concurrent is None:
        return 0
    # The epsilon keeps a share that is exact in decimal (0.29 of 100) from flooring one below.
    return max(1, math.floor(max_concurrent * share + 1e-9))
