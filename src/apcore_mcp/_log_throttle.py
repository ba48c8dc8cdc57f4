"""Log a repeated event once per interval with a count, instead of once per occurrence.

A peer that misbehaves in a loop (an upstream writing junk lines, a client retrying a bad
request) must not turn each occurrence into a log record: the first one of a kind is logged,
the following ones in the same interval are only counted, and the count is logged as
"N more in the last 60 s" when the next occurrence after the interval comes, or on ``flush``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Window:
    started: float
    suppressed: int = 0


class LogThrottle:
    """``log(level, key, message, *args)``: the first record per ``key`` and interval, the rest counted.

    ``key`` names the kind of event (``"not-json"``); its records all go to ``logger``
    without a traceback. Keys are few (kinds, not values): windows are kept per key.
    """

    def __init__(
        self, logger: logging.Logger, *, interval: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._windows: dict[str, _Window] = {}
        self._last: dict[str, tuple[int, str, tuple[object, ...]]] = {}

    def log(self, level: int, key: str, message: str, *args: object) -> None:
        now = self._clock()
        window = self._windows.get(key)
        if window is not None and now - window.started < self._interval:
            window.suppressed += 1
            self._last[key] = (level, message, args)
            return
        self._report(key)
        self._windows[key] = _Window(now)
        self._logger.log(level, message, *args)

    def flush(self) -> None:
        """Log the counts still held (the source is going away: nothing will come to log them)."""
        for key in list(self._windows):
            self._report(key)
        self._windows.clear()

    def _report(self, key: str) -> None:
        window = self._windows.get(key)
        if window is None or not window.suppressed:
            return
        level, message, args = self._last.pop(key)
        seconds = round(min(self._clock() - window.started, self._interval))
        self._logger.log(level, "%d more in the last %d s, the last: " + message, window.suppressed, seconds, *args)
        window.suppressed = 0
