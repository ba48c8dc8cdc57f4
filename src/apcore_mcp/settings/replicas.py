"""What several replicas of the server share: the Redis they meet in, and registry changes broadcast there."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from apcore_mcp.settings.option import SettingError, option

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True, kw_only=True)
class ReplicaSettings:
    redis_url: str | None = option(
        None,
        "Redis shared by the replicas (`redis://`, `rediss://` or `unix://`; needs `apcore-mcp[redis]`); "
        "without it every replica keeps its state to itself",
        group="replicas",
        metavar="URL",
        secret=True,
    )
    redis_prefix: str = option(
        "apcore-mcp:", "prefix of the Redis keys and channels this service uses", group="replicas"
    )
    broadcast_changes: bool = option(
        False,
        "publish registry changes on Redis so the clients of every replica hear `list_changed` "
        "(needs `redis_url` and `dynamic`)",
        group="replicas",
        kind="bool",
    )


def check_replicas(s: ReplicaSettings, *, dynamic: bool) -> None:
    """``dynamic``: the registry is followed live, which is what ``broadcast_changes`` broadcasts."""
    if s.redis_url is not None:
        if not isinstance(s.redis_url, str) or not s.redis_url.startswith(REDIS_SCHEMES):
            raise SettingError("redis_url", f"redis_url must start with one of: {', '.join(REDIS_SCHEMES)}")
        if importlib.util.find_spec("redis") is None:
            raise SettingError("redis_url", "redis_url needs the redis package: pip install 'apcore-mcp[redis]'")
    if not isinstance(s.redis_prefix, str) or not s.redis_prefix or any(c.isspace() for c in s.redis_prefix):
        raise SettingError("redis_prefix", "redis_prefix must be a non-empty string without spaces")
    if s.broadcast_changes and s.redis_url is None:
        raise SettingError("broadcast_changes", "broadcast_changes needs redis_url")
    if s.broadcast_changes and not dynamic:
        raise SettingError("broadcast_changes", "broadcast_changes needs dynamic (live registry changes)")
