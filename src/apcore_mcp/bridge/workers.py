"""Several worker processes of one server on one machine: what each worker's bridge is built with.

The workers are started by a supervisor (``apcore-mcp --workers N``, ``uvicorn --workers N``,
``gunicorn -w N``), each builds its own bridge, and the kernel hands each connection to any of
them. So every worker must agree, without talking to the others, on:

- how many workers there are: the ``workers`` setting, or what uvicorn or gunicorn says
  (``_hosts.hosted_workers``) when that setting was left at 1;
- the key ring sealing 2026-07-28 ``requestState`` (a round's retry may reach another worker):
  the operator's ``request_state_keys``, else one key made by the first worker of the machine and
  kept in the workers' private store (never logged); the explorer's generated execute token too;
- where their shared state lives: a private directory named after their supervisor.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from apcore_mcp._hosts import hosted_workers, supervisor_key
from apcore_mcp.settings import Settings
from apcore_mcp.settings.replicas import UNSHARED_KEYS

if TYPE_CHECKING:
    from apcore_mcp.replicas.machine.store import MachineStore

logger = logging.getLogger(__name__)

REQUEST_STATE_KEY = "request_state_key"
EXPLORER_TOKEN = "explorer_token"  # noqa: S105 - the name of a secret, not one


def machine_directory(supervisor: int | None = None) -> Path:
    """The private directory the workers of ``supervisor`` (default: this process's parent) share
    (created, mode 0700)."""
    from apcore_mcp.replicas.machine.store import private_directory

    return private_directory(supervisor_key(supervisor))


def for_workers(settings: Settings) -> Settings:
    """``settings`` as a worker of several builds with them (unchanged for a single process)."""
    hosted = hosted_workers()
    if settings.workers == 1 and hosted > 1:
        settings = settings.replace(workers=hosted)
    if settings.workers > 1 and not settings.request_state_keys:
        if settings.redis_url is not None:
            # The machine's key below covers this machine's workers only: replicas elsewhere still
            # need the operator's key ring, and once the key is set nothing later can tell.
            logger.warning(UNSHARED_KEYS)
        settings = settings.replace(request_state_keys=(shared_request_state_key(),))
    return settings


def shared_request_state_key(supervisor: int | None = None) -> str:
    """The sealing key every worker of ``supervisor`` (default: the parent) uses: the first to ask makes it."""
    return machine_secret(REQUEST_STATE_KEY, supervisor)


def machine_secret(name: str, supervisor: int | None = None) -> str:
    """The secret ``name`` every worker of ``supervisor`` (default: the parent) shares, made by the
    first to ask (random, 256 bits), kept in the workers' store only (never logged)."""
    with machine_store(supervisor) as store:
        return store.shared_secret(name, lambda: secrets.token_urlsafe(32))


@contextlib.contextmanager
def machine_store(supervisor: int | None = None) -> Iterator[MachineStore]:
    """The workers' store of ``supervisor`` (default: the parent), open for the block."""
    from apcore_mcp.replicas.machine.store import MachineStore

    store = MachineStore.open(machine_directory(supervisor))
    try:
        yield store
    finally:
        store.close()


def per_worker(total: int | None, workers: int) -> int | None:
    """A worker's part of a machine-wide cap (at least 1), so N workers together never pass ``total``."""
    return None if total is None else max(1, total // workers)


def announce_workers(settings: Settings) -> None:
    """Say once per machine, from the first worker to start, what several workers change."""
    if settings.workers < 2:
        return
    with machine_store() as store:
        if not store.first("announced"):
            return
        where = "Redis" if settings.redis_url is not None else f"the workers' store in {store.path.parent}"
    cap = settings.max_concurrent_calls
    # A WARNING: handshake-era clients lose what needs a session, which an operator must know.
    logger.warning(
        "%d workers serve this port: approvals, tasks and rate limits are shared through %s; "
        "2025-11-25 clients are served stateless (no session or GET stream: approval, elicitation and "
        "sampling need 2026-07-28 clients); each worker runs at most %s of the %s concurrent calls",
        settings.workers,
        where,
        per_worker(cap, settings.workers) or "any",
        cap or "unlimited",
    )
