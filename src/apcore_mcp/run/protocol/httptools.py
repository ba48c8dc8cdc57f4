"""uvicorn's httptools protocol with our header deadline and head size bound (``protocol.TimedHeads``).

A module of its own because httptools is an extra (``speed``): importing it needs httptools.
With the uvicorn command line pass ``--http apcore_mcp.run.protocol:TimedHttpToolsProtocol``.

Without httptools (an install without the ``speed`` extra running the Docker image's command)
the name is ``TimedH11Protocol``, the same deadline and bound on h11, and importing this module
logs one WARNING saying what to install: the server starts instead of failing on an import.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import TYPE_CHECKING

from apcore_mcp.run.protocol.timed import TimedH11Protocol, TimedHeads
from apcore_mcp.settings.service import SPEED_EXTRA

logger = logging.getLogger(__name__)

if TYPE_CHECKING or importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TimedHttpToolsProtocol(TimedHeads, HttpToolsProtocol):
        """``HttpToolsProtocol`` that closes connections whose request headers arrive too slowly."""

        _head_awaited = True
        """Between a request's end (or the connection's start) and the next request's headers."""

        def _awaiting_head(self) -> bool:
            return self._head_awaited

        def _may_answer(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def on_headers_complete(self) -> None:
            self._head_awaited = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._head_awaited = True  # what follows this request is the next one's head
            super().on_message_complete()

        def on_response_complete(self) -> None:
            parsed_next = bool(self.pipeline)  # a pipelined request's headers have come already
            super().on_response_complete()
            if not parsed_next and self._head_bytes and not self.transport.is_closing():
                self._arm()  # the next request's head has begun (pipelined): it is timed already

        def shutdown(self) -> None:
            if not self._shutdown_gently():
                super().shutdown()
else:
    logger.warning(
        "httptools is not installed, so TimedHttpToolsProtocol runs on h11 (the same header deadline and "
        "size bound, a slower parser): %s",
        SPEED_EXTRA,
    )
    TimedHttpToolsProtocol = TimedH11Protocol
