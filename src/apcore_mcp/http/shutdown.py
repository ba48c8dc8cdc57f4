"""Graceful shutdown under any uvicorn: let calls in flight answer, then end the event streams.

The SDK's SSE responses come from sse-starlette, which by default ends *every* event stream
the moment uvicorn sees a stop signal, including the POST streams that are about to carry
the replies of calls in flight. We turn that off and end the streams ourselves once the
calls have finished (or ``shutdown_timeout`` passed). This works for ``uvicorn app:create_app
--factory`` (the server is found through its signal handler, as sse-starlette does) and for
our own ``HttpServer`` (``run.serving``), which calls ``drain()`` from its shutdown.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

import anyio
from sse_starlette.sse import AppStatus

from apcore_mcp.calls.router import CallRouter

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.2
SETTLE_SECONDS = 0.1
"""A request read just before the stop reaches the router within a moment: wait that long first."""
CANCEL_GRACE_SECONDS = 0.5
"""How long cancelled calls get to send their answers before the streams end."""


def take_over_stream_draining() -> None:
    """Stop sse-starlette from ending streams at the first signal (process-wide)."""
    AppStatus.enable_automatic_graceful_drain = False


def end_streams() -> None:
    """Ask every open event stream in this process to finish now."""
    AppStatus.should_exit = True


def reset_streams() -> None:
    """Undo ``end_streams()`` so a later server in the same process streams normally."""
    AppStatus.should_exit = False


def _signalled_uvicorn() -> Any | None:
    handler = signal.getsignal(signal.SIGTERM)
    server = getattr(handler, "__self__", None)
    return server if getattr(server, "should_exit", False) else None


async def drain_when_stopping(
    router: CallRouter,
    limit_seconds: float,
    on_stopping: Callable[[], None] | None = None,
    end_listens: Callable[[], None] | None = None,
) -> None:
    """Run for the app's life: once uvicorn is stopping, call ``on_stopping``, wait for calls, then end streams."""
    while _signalled_uvicorn() is None:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await anyio.sleep(POLL_SECONDS)
    if on_stopping is not None:
        on_stopping()
    await drain(router, limit_seconds, end_listens)


async def drain(router: CallRouter, limit_seconds: float, end_listens: Callable[[], None] | None = None) -> None:
    """Wait (at most ``limit_seconds``) for calls in flight, cancel the rest, then end every event stream.

    ``end_listens`` ends the 2026-07-28 ``subscriptions/listen`` streams, which are not
    sse-starlette's to end: each sends its final result, and the client re-listens elsewhere.

    A call still running past the limit is cancelled here and answers a ``cancelled`` error,
    rather than being cut off by uvicorn's forced cancellation (a broken stream and an ERROR).
    """
    # A request read just before the stop reaches the router within a moment (uvicorn waits
    # as long after closing connections): count it in, or its stream would end unanswered.
    await anyio.sleep(SETTLE_SECONDS)
    if router.in_flight:
        logger.info("Waiting up to %.1fs for %d call(s) in flight", limit_seconds, router.in_flight)
        with anyio.move_on_after(limit_seconds):
            await router.wait_idle()
    if router.in_flight and (cancelled := router.cancel_all()):
        logger.warning("Cancelled %d call(s) still running after %.1fs", cancelled, limit_seconds)
        with anyio.move_on_after(CANCEL_GRACE_SECONDS):
            await router.wait_idle(poll_seconds=0.01)
    if end_listens is not None:
        end_listens()
    end_streams()
