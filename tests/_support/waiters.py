"""Modules that wait to be cancelled (async and sync), for the pipeline's cancellation and pool tests.

Every wait is bounded by ``HANG_GUARD_S``, so a broken cancellation fails a test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pydantic import BaseModel

HANG_GUARD_S = 10.0


class Empty(BaseModel):
    pass


class AsyncWaiter:
    """Waits (far longer than any test) and records how it ended."""

    description = "Async module that waits to be cancelled"
    input_schema = Empty
    output_schema = Empty

    def __init__(self, *, swallow: bool = False) -> None:
        self.swallow = swallow
        self.started = 0
        self.all_started = asyncio.Event()
        self.expected = 1
        self.cancelled = 0
        self.reached_end = 0
        self.token_set_when_cancelled: list[bool] = []
        self.contexts: list[Any] = []

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        self.started += 1
        if self.started >= self.expected:
            self.all_started.set()
        try:
            await asyncio.sleep(HANG_GUARD_S)
        except asyncio.CancelledError:
            self.cancelled += 1
            self.token_set_when_cancelled.append(context.cancel_token.is_cancelled)
            if not self.swallow:
                raise
            return {}
        self.reached_end += 1
        return {}


class SyncWaiter:
    """Blocks until its token is set, or (if ``stubborn``) until ``release`` is set; records what it saw."""

    description = "Sync module that waits"
    input_schema = Empty
    output_schema = Empty

    def __init__(self, *, stubborn: bool = False) -> None:
        self.stubborn = stubborn
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.started = 0
        self.returned = 0
        self.saw_token: list[bool] = []
        self.started_event = threading.Event()
        self.returned_event = threading.Event()
        self.expect_returns = 1

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        with self.lock:
            self.started += 1
        self.started_event.set()
        if self.stubborn:
            self.release.wait(HANG_GUARD_S)
        else:
            for _ in range(int(HANG_GUARD_S / 0.005)):
                if context.cancel_token.is_cancelled:
                    break
                self.release.wait(0.005)
        with self.lock:
            self.saw_token.append(context.cancel_token.is_cancelled)
            self.returned += 1
            if self.returned >= self.expect_returns:
                self.returned_event.set()
        return {}


def with_timeout(module: Any, timeout_ms: int) -> Any:
    module.resources = {"timeout": timeout_ms}
    return module


async def wait_thread_event(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, HANG_GUARD_S), "hang guard: the module never signalled"
