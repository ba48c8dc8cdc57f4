"""The record of used 2026-07-28 approvals in Redis, shared by every replica.

One ``SET key 1 NX PX ttl`` per granted approval: atomic on the Redis server, so of two
replicas receiving the same state and answer at once exactly one approves. The key expires
with the state's lifetime, so the record costs nothing once a state could no longer be sent.

Redis away: there is no fallback that keeps the guarantee (this process's own record would not
see a use on another replica), so approvals granted from a state are refused until Redis is
back. A WARNING says so once; ``/ready`` reports it.
"""

from __future__ import annotations

import math

from redis.exceptions import RedisError

from apcore_mcp.calls.used_approvals import UsedApprovalsUnavailable
from apcore_mcp.replicas.link import RedisLink

USER = "approvals"
FALLBACK = "approvals answered in 2026-07-28 input rounds are refused (a replay could not be detected)"


class RedisUsedApprovals:
    """``UsedApprovals`` in Redis under ``<prefix>approval:<sha256 of the state>``."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link

    async def claim(self, digest: bytes, ttl: float) -> bool:
        if not self.link.available():
            raise UsedApprovalsUnavailable("the shared record (Redis) is unreachable")
        key = self.link.key("approval:" + digest.hex())
        try:
            first = await self.link.client.set(key, b"1", nx=True, px=max(1, math.ceil(ttl * 1000)))
        except (RedisError, OSError) as exc:
            self.link.failed(USER, exc, FALLBACK)
            raise UsedApprovalsUnavailable("the shared record (Redis) is unreachable") from exc
        self.link.succeeded(USER)
        return bool(first)
