"""Several replicas of one service: what they share through Redis (optional).

In-memory stays the default: without ``redis_url`` nothing here is imported. With it, each
replica opens one ``RedisLink``; ``broadcast_changes`` relays registry changes between the
replicas (``ChangeBroadcaster``), and the rate-limit buckets can live there too. Redis being
away never stops a replica: it falls back to what it can do alone, says so in a WARNING,
and ``/ready`` names the degradation.
"""
