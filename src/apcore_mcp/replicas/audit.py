"""Approval audit records kept in Redis for ``audit_retention`` seconds, shared by every replica.

One sorted set, ``<prefix>audit``, scored by the time of the decision: each record is added,
records older than the retention are dropped in the same transaction, and the set expires
once nothing has been added for a whole retention. Read them with
``ZRANGEBYSCORE <prefix>audit <since> +inf``. The record never holds the arguments unless
``audit_arguments`` asks (then masked), as in the log.

Redis away: the record is still in the log (it is written there first); a WARNING says once
that Redis keeps none, and ``/ready`` reports it. The decision itself never waits on Redis.
"""

from __future__ import annotations

import math
import time

from redis.exceptions import RedisError

from apcore_mcp.replicas.link import RedisLink

USER = "audit"
FALLBACK = "approval audit records are in the log only"


class RedisAuditLog:
    """``AuditStore`` in Redis: the decisions of the last ``retention`` seconds."""

    def __init__(self, link: RedisLink, retention: float) -> None:
        self.link = link
        self.retention = retention

    async def keep(self, record: str) -> None:
        if not self.link.available():
            return
        key, now = self.link.key("audit"), time.time()
        try:
            async with self.link.client.pipeline(transaction=True) as pipe:
                pipe.zadd(key, {record: now})
                pipe.zremrangebyscore(key, "-inf", now - self.retention)
                pipe.expire(key, max(1, math.ceil(self.retention)))
                await pipe.execute()
        except (RedisError, OSError) as exc:
            self.link.failed(USER, exc, FALLBACK)
            return
        self.link.succeeded(USER)
