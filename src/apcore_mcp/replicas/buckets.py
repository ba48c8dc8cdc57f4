"""Rate-limit token buckets in Redis, one per caller, shared by every replica.

``RedisBuckets`` implements ``BucketStore``: ``take(key, rate, burst, now)`` takes one token from
``key``'s bucket (``burst`` tokens, refilled at ``rate`` per second) and returns 0.0, or the
seconds until a token will be there. One Lua script does the read, the refill and the take
atomically on the Redis server, with the server's clock: replicas' clocks (and the ``now``
they pass) never have to agree. A bucket's key expires once it would be full again, so idle
callers cost no memory.

Redis away: the take falls back to ``fallback`` (a bucket in this process), so each replica then
allows the full rate on its own (N replicas: up to N times the limit) instead of refusing
every call or letting every call through. A WARNING says so; ``/ready`` reports it.
"""

from __future__ import annotations

import hashlib
import math

from redis.exceptions import RedisError

from apcore_mcp.calls.limits import BucketStore, MemoryBuckets
from apcore_mcp.replicas.link import RedisLink

USER = "rate limits"
FALLBACK = "each replica counts rate limits on its own (up to one full limit per replica)"

TAKE_SCRIPT = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""
"""Returns the wait as a string: Redis turns a Lua number reply into an integer."""


def bucket_key(link: RedisLink, key: str) -> str:
    """The Redis key of a caller's bucket: hashed, so no identity appears in Redis and length is bounded."""
    return link.key("bucket:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32])


class RedisBuckets:
    """``BucketStore`` in Redis, falling back to ``fallback`` while Redis cannot be reached."""

    def __init__(self, link: RedisLink, fallback: BucketStore | None = None) -> None:
        self.link = link
        self.fallback: BucketStore = fallback if fallback is not None else MemoryBuckets()
        self._take = link.client.register_script(TAKE_SCRIPT)

    async def take(self, key: str, rate: float, burst: int, now: float) -> float:
        if not (rate > 0 and math.isfinite(rate)) or burst < 1:
            raise ValueError(f"rate must be positive and burst at least 1, got rate={rate!r} burst={burst!r}")
        if self.link.available():
            try:
                reply = await self._take(keys=[bucket_key(self.link, key)], args=[repr(float(rate)), burst])
            except (RedisError, OSError) as exc:
                self.link.failed(USER, exc, FALLBACK)
            else:
                self.link.succeeded(USER)
                return float(reply)
        return await self.fallback.take(key, rate, burst, now)
