"""uvicorn's httptools protocol with our header deadline and head size bound (``protocol.TimedHeads``).

A module of its own because httptools is an extra (``speed``): importing it needs httptools.
With the uvicorn command line pass ``--http apcore_mcp.run.protocol_httptools:TimedHttpToolsProtocol``.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from apcore_mcp.run.protocol import TimedHeads


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
