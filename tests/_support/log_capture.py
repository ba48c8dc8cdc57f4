"""Every log record of the process, whatever each logger's level and propagation, for tests that
promise something about all of them (no secret in any; no ERROR for a client's mistake)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class EveryRecord(logging.Handler):
    """The records it was handed, and each as a plain formatter renders it (traceback included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.rendered: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.rendered.append(self.format(record))


@contextlib.contextmanager
def every_record() -> Iterator[EveryRecord]:
    """Every record of every logger at DEBUG while inside; levels are put back after."""
    handler = EveryRecord()
    root = logging.getLogger()
    loggers = [root, *(one for one in logging.Logger.manager.loggerDict.values() if isinstance(one, logging.Logger))]
    saved = [(logger, logger.level) for logger in loggers]
    apart = [logger for logger in loggers if not logger.propagate]  # their records never reach the root
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    for logger in [root, *apart]:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in [root, *apart]:
            logger.removeHandler(handler)
        for logger, level in saved:
            logger.setLevel(level)
