"""Several processes of one service: worker processes on one machine, and replicas behind a balancer
sharing Redis (with registry changes broadcast there)."""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass
from pathlib import Path

from apcore_mcp.settings.option import SettingError, option, set_field

MAX_WORKERS = 256
UNSHARED_KEYS = (
    "redis_url is set, so replicas share state, but request_state_keys is not: each replica seals "
    "2026-07-28 requestState with its own key, and an input-required round fails when its retry "
    "reaches another replica. Give every replica the same request_state_keys."
)
"""Said at start: the operator runs replicas without one key ring (its workers still share one)."""
CGROUP = Path("/sys/fs/cgroup")

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True, kw_only=True)
class ReplicaSettings:
    workers: int = option(
        1,
        "worker processes serving one port, sharing approvals, tasks and rate limits in a private store "
        "(`auto`: the CPUs this process may use, its cgroup's CPU quota included); with more than one, "
        "2025-11-25 clients are served stateless",
        group="replicas",
        metavar="N",
    )
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
    audit_retention: float = option(
        0.0,
        "with `redis_url`: seconds approval audit records are also kept in Redis (the sorted set "
        "`<redis_prefix>audit`, newest last); 0 keeps them in the log only",
        group="replicas",
        kind="float",
    )
    broadcast_changes: bool = option(
        False,
        "publish registry changes on Redis so the clients of every replica hear `list_changed` "
        "(needs `redis_url` and `dynamic`)",
        group="replicas",
        kind="bool",
    )


def usable_cpus(cgroup: Path = CGROUP) -> int:
    """The CPUs this process may use, at least one: those it may run on (its affinity), fewer when
    its cgroup has a CPU quota (``docker run --cpus``, a Kubernetes CPU limit), rounded up."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    quota = cpu_quota(cgroup)
    return max(1, min(cpus, math.ceil(quota)) if quota is not None else cpus)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in CPUs (``None``: none, or not Linux): cgroup v2's
    ``cpu.max``, else v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``."""
    try:
        quota, _, period = (cgroup / "cpu.max").read_text().partition(" ")
    except OSError:
        try:
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text()
        except OSError:
            return None
    try:
        value, every = float(quota), float(period)
    except ValueError:  # "max": no quota
        return None
    return value / every if value > 0 and every > 0 else None


def worker_count(value: object) -> int:
    """``workers`` as a number: a whole number from 1 to ``MAX_WORKERS``, or ``auto``.

    Raises:
        SettingError: anything else.
    """
    if isinstance(value, str) and value.strip().lower() == "auto":
        return min(usable_cpus(), MAX_WORKERS)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise SettingError("workers", f"workers must be a whole number from 1 to {MAX_WORKERS}, or auto; got {value!r}")
    return value


def check_replicas(s: ReplicaSettings, *, dynamic: bool) -> None:
    """``dynamic``: the registry is followed live, which is what ``broadcast_changes`` broadcasts."""
    set_field(s, "workers", worker_count(s.workers))
    if s.redis_url is not None:
        if not isinstance(s.redis_url, str) or not s.redis_url.startswith(REDIS_SCHEMES):
            raise SettingError("redis_url", f"redis_url must start with one of: {', '.join(REDIS_SCHEMES)}")
        if importlib.util.find_spec("redis") is None:
            raise SettingError("redis_url", "redis_url needs the redis package: pip install 'apcore-mcp[redis]'")
    if not isinstance(s.redis_prefix, str) or not s.redis_prefix or any(c.isspace() for c in s.redis_prefix):
        raise SettingError("redis_prefix", "redis_prefix must be a non-empty string without spaces")
    if not isinstance(s.audit_retention, int | float) or s.audit_retention < 0:
        raise SettingError("audit_retention", "audit_retention must be a number of seconds, 0 or more")
    if s.audit_retention and s.redis_url is None:
        raise SettingError("audit_retention", "audit_retention needs redis_url (the log keeps records without it)")
    if s.broadcast_changes and s.redis_url is None:
        raise SettingError("broadcast_changes", "broadcast_changes needs redis_url")
    if s.broadcast_changes and not dynamic:
        raise SettingError("broadcast_changes", "broadcast_changes needs dynamic (live registry changes)")
