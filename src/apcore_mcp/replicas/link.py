"""One Redis client per app, and the account of whether Redis is reachable.

Every user of the link (change broadcast, rate-limit buckets, used approvals) reports its failures
and successes here. The first failure of an outage logs one WARNING naming what the replica
does instead (its fallback); the first success after it logs that Redis is back. While Redis
is away, ``available()`` is false for ``cooldown`` seconds after each failure, so per-call
users skip the network and take their fallback at once instead of paying a connection
attempt on every call.

``/ready`` asks too (``probe``): a PING bounded by ``PROBE_TIMEOUT_SECONDS``, at most once per
``PROBE_SECONDS``, so an outage shows before any user tried Redis, and asking ``/ready`` often
does not mean asking Redis often.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 1.0
COMMAND_TIMEOUT_SECONDS = 1.0
HEALTH_CHECK_SECONDS = 5
COOLDOWN_SECONDS = 2.0
PROBE_SECONDS = 1.0
PROBE_TIMEOUT_SECONDS = 0.5
PROBE_USER = "readiness"
PROBE_FALLBACK = "each shared feature takes its fallback when it finds Redis away"


class RedisLink:
    """The Redis client of one replica and its health, as ``/ready`` reports it."""

    def __init__(
        self,
        url: str,
        prefix: str,
        *,
        cooldown: float = COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # One retry, on a fresh connection (a pooled one is stale after Redis restarted), and
        # short timeouts: the callers have fallbacks, a stalled call has none.
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
            socket_timeout=COMMAND_TIMEOUT_SECONDS,
            health_check_interval=HEALTH_CHECK_SECONDS,
            retry=Retry(NoBackoff(), 1),
        )
        self.prefix = prefix
        self.cooldown = cooldown
        self._clock = clock
        self._failures: dict[str, str] = {}  # user -> what it does instead, while Redis is away
        self._error: str | None = None
        self._retry_at = 0.0
        self._probe_due = 0.0

    def key(self, name: str) -> str:
        """A Redis key or channel in this service's namespace."""
        return self.prefix + name

    def available(self) -> bool:
        """False shortly after a failure: per-call users take their fallback without trying."""
        return self._error is None or self._clock() >= self._retry_at

    def failed(self, user: str, error: BaseException, fallback: str) -> None:
        """``user`` could not reach Redis; until it can, it does ``fallback``."""
        self._error = f"{type(error).__name__}: {error}"
        self._retry_at = self._clock() + self.cooldown
        if user not in self._failures:
            logger.warning("Redis unreachable for %s (%s): %s until it is back", user, self._error, fallback)
        self._failures[user] = fallback

    def succeeded(self, user: str) -> bool:
        """``user`` reached Redis; returns whether it had been failing (an outage just ended)."""
        if self._failures.pop(user, None) is None:
            return False
        logger.warning("Redis reachable again for %s", user)
        if not self._failures:
            self._error = None
        return True

    def problem(self) -> str | None:
        """What ``/ready`` says while some user cannot reach Redis, else ``None``."""
        if not self._failures:
            return None
        fallbacks = "; ".join(f"{user}: {fallback}" for user, fallback in sorted(self._failures.items()))
        return f"unreachable ({self._error}); {fallbacks}"

    async def probe(self) -> None:
        """PING Redis for ``/ready``, unless a probe started less than ``PROBE_SECONDS`` ago.

        The due time moves before the PING is sent, so concurrent callers do not pile up on it.
        """
        now = self._clock()
        if now < self._probe_due:
            return
        self._probe_due = now + PROBE_SECONDS
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
                await self.client.ping()
        except (RedisError, OSError, TimeoutError) as exc:
            self.failed(PROBE_USER, exc, PROBE_FALLBACK)
        else:
            self.succeeded(PROBE_USER)

    async def aclose(self) -> None:
        await self.client.aclose()
