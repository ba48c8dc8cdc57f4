"""Several replicas of one service: what they share through Redis (optional).

In-memory stays the default: without ``redis_url`` nothing here is imported. With it, each
replica opens one ``RedisLink``; ``broadcast_changes`` relays registry changes between the
replicas (``ChangeBroadcaster``), and the rate-limit buckets and the record of used 2026-07-28
approvals (``RedisUsedApprovals``: an approval is single-use across replicas) live there too.
Redis being away never stops a replica: it falls back to what it can do alone (approvals
answered in input rounds: refused, failing closed), says so in a WARNING, and ``/ready`` names
the degradation.
"""
