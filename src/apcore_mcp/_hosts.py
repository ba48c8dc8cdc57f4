"""What the server hosting this process says about its worker processes: the private API of uvicorn
and gunicorn, read here only (``tests/project/test_hosts.py`` runs both for real).

``uvicorn --workers N`` and ``gunicorn -w N`` start N processes that each build the app, and neither
tells the app how many there are. Each keeps that number on the object whose method builds the app,
so it is on the call stack while the app is built: uvicorn's ``Config`` (``load()`` imports the app
and calls the factory) and gunicorn's worker, arbiter or application (their ``cfg``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from types import FrameType


def hosted_workers(frame: FrameType | None = None) -> int:
    """How many worker processes the server building the app runs (1 when none of ours is found).

    ``frame``: where to start looking up the stack (default: the caller's).
    """
    current: FrameType | None = frame if frame is not None else sys._getframe(1)
    while current is not None:
        count = _workers_of(current.f_locals.get("self"))
        if count is not None:
            return count
        current = current.f_back
    return 1


def _workers_of(owner: object) -> int | None:
    module = type(owner).__module__
    if module == "uvicorn.config":
        value = getattr(owner, "workers", None)
    elif module.startswith(("gunicorn.", "uvicorn.workers", "uvicorn_worker")):
        value = getattr(getattr(owner, "cfg", None), "workers", None)
    else:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def supervisor_key(supervisor: int | None = None) -> str:
    """A name for a supervisor (default: this process's parent) and what it runs, that no other
    supervisor and no later process will have.

    ``<pid>-<start>-<command>``: a pid alone could be a dead supervisor's, recycled, so its start
    time (clock ticks since boot, Linux) goes with it; and processes that merely share a parent
    (services under one init, pid 1) differ by their command line and directory, which the workers
    of one supervisor share (spawned workers get their parent's, forked ones keep theirs).
    """
    pid = os.getppid() if supervisor is None else supervisor
    command = hashlib.sha256("\0".join([os.getcwd(), *sys.argv]).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{pid}-{_start_ticks(pid)}-{command[:16]}"


def supervisor_gone(key: str) -> bool:
    """Whether the supervisor ``key`` names has ended (its pid is gone or now another process's)."""
    pid, _, rest = key.partition("-")
    start = rest.partition("-")[0]
    if not pid.isdigit() or start == "0":
        return False  # not one of our names, or no procfs to tell
    return _start_ticks(int(pid)) != start


def _start_ticks(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone" if Path("/proc/self/stat").exists() else "0"  # no procfs: the pid alone
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return stat.rpartition(")")[2].split()[19]
