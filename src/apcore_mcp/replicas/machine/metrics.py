"""Each worker's latest metrics in the workers' store, so any worker can answer ``/metrics`` for all.

A worker publishes its exposition every ``PUBLISH_SECONDS`` (and when it answers a scrape); a
scrape reads every live worker's. A worker that died or stopped publishing for ``STALE_SECONDS``
is left out (its counters leave the sum, as a restarted process's would), and its row is deleted
by the next publication of any worker: the table holds the live workers' rows only.
"""

from __future__ import annotations

import os
import time

from apcore_mcp.replicas.machine.store import MachineStore

PUBLISH_SECONDS = 1.0
STALE_SECONDS = 10.0


class MachineMetrics:
    """This worker's row of the ``metrics`` table, and everyone's."""

    def __init__(self, store: MachineStore) -> None:
        self.store = store
        self.pid = os.getpid()

    def publish(self, text: bytes) -> None:
        with self.store.writing() as db:
            db.execute("DELETE FROM metrics WHERE at < ?", (time.monotonic() - STALE_SECONDS,))
            db.execute(
                "INSERT INTO metrics (pid, at, text) VALUES (?, ?, ?) "
                "ON CONFLICT (pid) DO UPDATE SET at = excluded.at, text = excluded.text",
                (self.pid, time.monotonic(), text),
            )

    def withdraw(self) -> None:
        with self.store.writing() as db:
            db.execute("DELETE FROM metrics WHERE pid = ?", (self.pid,))

    def everyone(self, mine: bytes) -> list[bytes]:
        """``mine`` (published now) and the other live workers' latest expositions."""
        self.publish(mine)
        rows = self.store.connection.execute(
            "SELECT pid, text FROM metrics WHERE at >= ? AND pid != ?", (time.monotonic() - STALE_SECONDS, self.pid)
        ).fetchall()
        return [mine, *(bytes(text) for pid, text in rows if _alive(int(pid)))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now: not one of our workers
        return False
    return True
