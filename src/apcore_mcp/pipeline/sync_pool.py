"""A bounded thread pool for sync modules, in which a call its caller gave up on frees its slot.

Why not the loop's default executor: apcore runs a sync ``execute`` with
``loop.run_in_executor(None, ...)``, a pool of ``min(32, cores + 4)`` threads (6 on two cores).
A thread cannot be killed, so a call that timed out keeps its worker until the module returns,
and six slow calls make every other sync tool of the process wait, then time out.

Design: slots and threads are counted apart.

- ``size`` *slots* bound how many sync calls run at once. A call that finds no free slot waits
  in FIFO order (the event loop is not blocked); if its caller gives up while it waits, it is
  dropped and never runs.
- A running call whose caller gives up (timeout or cancellation; the caller has already set the
  call's ``CancelToken``) is *abandoned*: its slot goes at once to the next waiting call, on an
  idle thread or a new one, while its own thread finishes the module in the background, throws
  the result away and then becomes an idle thread (or exits if ``size`` threads are idle).
- At most ``max_abandoned`` threads can be abandoned at a time: that is the hard bound on
  threads the pool cannot use. When it is reached a WARNING is logged (once, until the count
  falls again) and a further abandoned call keeps its slot until its module returns, so capacity
  shrinks instead of the thread count growing. The process then holds at most
  ``size + max_abandoned`` busy threads and ``size`` idle ones.
  Cooperative modules (checking ``context.cancel_token.is_cancelled``) give their thread back
  soon after the token is set.
- Threads are daemon threads started on demand and reused, so a stuck module never blocks
  interpreter exit. ``close()`` refuses new calls, fails the waiting ones and ends idle threads.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any

logger = logging.getLogger(__name__)

_QUEUED, _RUNNING, _DONE = "queued", "running", "done"
_Inbox = queue.SimpleQueue["Job | None"]


class PoolClosedError(RuntimeError):
    """The pool was closed before the call could run."""


class Job:
    """One submitted call; ``future`` completes with its result unless it is abandoned.

    ``doomed`` (optional) tells whether the caller has already given up, before it got round to
    ``abandon()``: a freed slot skips such a call instead of starting it for nothing.
    """

    __slots__ = ("abandoned", "args", "doomed", "fn", "future", "state")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], doomed: Callable[[], bool] | None) -> None:
        self.fn = fn
        self.args = args
        self.doomed = doomed
        self.future: Future[Any] = Future()
        self.state = _QUEUED
        self.abandoned = False


class SyncPool:
    """``size`` concurrent sync calls; abandoned calls give their slot back (see module doc)."""

    def __init__(self, size: int, *, max_abandoned: int | None = None, name: str = "apcore-mcp-sync") -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self.max_abandoned = 2 * size if max_abandoned is None else max_abandoned
        if self.max_abandoned < 0:
            raise ValueError(f"max_abandoned must not be negative, got {max_abandoned}")
        self._name = name
        self._lock = threading.Lock()
        self._free = size
        self._waiting: deque[Job] = deque()
        self._idle: list[_Inbox] = []
        self._threads = 0
        self._abandoned = 0
        self._saturated = False
        self._closed = False
        self._leases = 0
        self._ids = itertools.count(1)

    def submit(self, fn: Callable[..., Any], *args: Any, doomed: Callable[[], bool] | None = None) -> Job:
        """Queue ``fn(*args)``; it runs as soon as a slot is free (``doomed``: see :class:`Job`).

        Raises:
            PoolClosedError: after ``close()``.
        """
        job = Job(fn, args, doomed)
        with self._lock:
            if self._closed:
                raise PoolClosedError("the sync module pool is closed")
            if not self._free:
                self._waiting.append(job)
                return job
            self._free -= 1
            job.state = _RUNNING
            inbox = self._thread_for_locked()
        self._start(job, inbox)
        return job

    def abandon(self, job: Job) -> None:
        """The caller gave up on ``job``: drop it if it waits, free its slot if it runs."""
        with self._lock:
            if job.state == _QUEUED:
                self._waiting.remove(job)
                job.state = _DONE
                job.future.cancel()
                return
            if job.state == _DONE or job.abandoned:
                return
            if self._abandoned >= self.max_abandoned:
                warn, self._saturated = not self._saturated, True
                handoff = None
            else:
                warn = False
                job.abandoned = True
                self._abandoned += 1
                handoff = self._hand_slot_locked()
        if warn:
            logger.warning(
                "%d sync module calls that timed out or were cancelled are still running (the bound); "
                "further abandoned calls keep their worker slot until their module returns. "
                "Make slow sync modules check context.cancel_token.is_cancelled, or raise max_abandoned.",
                self.max_abandoned,
            )
        if handoff is not None:
            self._start(*handoff)

    def lease(self) -> Callable[[], None]:
        """Hold the pool open (reopening it if closed) until the returned function releases it.

        Each server serving the executor holds a lease; the last release closes the pool, so
        its idle threads end with the last server, and a later server opens it again.
        """
        with self._lock:
            self._leases += 1
            self._closed = False
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                self._leases -= 1
                last = self._leases == 0
            if last:
                self.close()

        return release

    def close(self) -> None:
        """Refuse new calls, fail waiting ones, end idle threads; running calls finish (idempotent)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = list(self._waiting), deque()
            for job in waiting:
                job.state = _DONE  # under the lock: abandon() must not look for it in the queue
            idle, self._idle = self._idle, []
            self._threads -= len(idle)
        for job in waiting:
            with contextlib.suppress(InvalidStateError):  # its caller cancelled it meanwhile
                job.future.set_exception(PoolClosedError("the sync module pool was closed before the call ran"))
        for inbox in idle:
            inbox.put(None)

    def stats(self) -> dict[str, int]:
        """Slots in use, calls waiting, abandoned threads, threads alive (busy or idle)."""
        with self._lock:
            return {
                "size": self.size,
                "busy": self.size - self._free,
                "waiting": len(self._waiting),
                "abandoned": self._abandoned,
                "threads": self._threads,
                "idle": len(self._idle),
            }

    # -- internals ---------------------------------------------------------------------------------

    def _pop_waiting_locked(self) -> Job | None:
        """The first waiting call whose caller still wants it; doomed ones stay until abandoned."""
        for job in self._waiting:
            if job.doomed is None or not job.doomed():
                self._waiting.remove(job)
                job.state = _RUNNING
                return job
        return None

    def _thread_for_locked(self) -> _Inbox | None:
        """An idle thread's inbox, or None after counting a thread the caller will start."""
        if self._idle:
            return self._idle.pop()
        self._threads += 1
        return None

    def _hand_slot_locked(self) -> tuple[Job, _Inbox | None] | None:
        """Give a freed slot to the next waiting call on another thread, or return it to the pool."""
        job = self._pop_waiting_locked()
        if job is None:
            self._free += 1
            return None
        return job, self._thread_for_locked()

    def _start(self, job: Job, idle: _Inbox | None) -> None:
        """Run ``job`` on an idle thread, or on a new one when ``idle`` is None."""
        # The job always goes through an inbox, never the thread's arguments, which the Thread
        # object keeps for its whole life (and with them the call's context and executor).
        inbox: _Inbox = idle if idle is not None else queue.SimpleQueue()
        inbox.put(job)
        if idle is not None:
            return
        thread = threading.Thread(target=self._work, args=(inbox,), name=f"{self._name}-{next(self._ids)}", daemon=True)
        thread.start()

    def _work(self, inbox: _Inbox) -> None:
        job: Job | None = None
        while True:
            if job is None:
                job = inbox.get()
                if job is None:
                    return
            _run(job)
            job, keep = self._finish(job, inbox)
            if not keep:
                return

    def _finish(self, job: Job, inbox: _Inbox) -> tuple[Job | None, bool]:
        """Account for a finished call: (the next call for this thread or None to idle, keep the thread)."""
        with self._lock:
            job.state = _DONE
            if job.abandoned:
                # This thread holds no slot any more (it went to another call when the caller gave up).
                self._abandoned -= 1
                if self._abandoned < self.max_abandoned:
                    self._saturated = False
            else:
                following = self._pop_waiting_locked()
                if following is not None:
                    return following, True
                self._free += 1
            if self._closed or len(self._idle) >= self.size:
                self._threads -= 1
                return None, False
            self._idle.append(inbox)
            return None, True


def _run(job: Job) -> None:
    if not job.future.set_running_or_notify_cancel():
        return
    fn, args = job.fn, job.args
    job.args = ()  # an abandoned job may outlive its call: let go of the inputs and context
    try:
        result = fn(*args)
    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller, as concurrent.futures does
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)
    finally:
        del fn, args
