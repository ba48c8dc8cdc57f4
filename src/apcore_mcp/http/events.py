"""A bounded in-memory event store: resumable Streamable HTTP streams for handshake-era clients.

With it, the server sends each response stream a priming event (an id and a ``retry`` hint);
a client whose stream broke (a proxy timeout, a server that released the stream of a long
call) reconnects with ``GET /mcp`` and ``Last-Event-ID`` and receives what it missed. Memory is
bounded: at most ``max_events`` per stream and ``max_streams`` streams, oldest dropped first;
a cursor that fell out is answered as unknown (the client then re-sends its request).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

DEFAULT_MAX_EVENTS = 256
DEFAULT_MAX_STREAMS = 10_000


@dataclass(frozen=True, slots=True)
class _Event:
    seq: int
    message: JSONRPCMessage | None


class MemoryEventStore(EventStore):
    def __init__(self, *, max_events: int = DEFAULT_MAX_EVENTS, max_streams: int = DEFAULT_MAX_STREAMS) -> None:
        self._max_events = max_events
        self._max_streams = max_streams
        self._streams: OrderedDict[StreamId, deque[_Event]] = OrderedDict()
        self._seq = 0

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        self._seq += 1
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque(maxlen=self._max_events)
            while len(self._streams) > self._max_streams:
                self._streams.popitem(last=False)
        else:
            self._streams.move_to_end(stream_id)
        events.append(_Event(self._seq, message))
        return _event_id(stream_id, self._seq)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        parsed = _parse_event_id(last_event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        events = self._streams.get(stream_id)
        if events is None or not any(event.seq == seq for event in events):
            return None
        for event in list(events):
            if event.seq > seq and event.message is not None:
                await send_callback(EventMessage(event.message, _event_id(stream_id, event.seq)))
        return stream_id


def stream_of(event_id: EventId) -> StreamId | None:
    """The stream an event id of this store belongs to (a request's stream is named by its id)."""
    parsed = _parse_event_id(event_id)
    return parsed[0] if parsed is not None else None


def _event_id(stream_id: StreamId, seq: int) -> EventId:
    return f"{seq}_{stream_id}"


def _parse_event_id(event_id: EventId) -> tuple[StreamId, int] | None:
    seq, sep, stream_id = event_id.partition("_")
    if not sep or not seq.isdigit() or not stream_id:
        return None
    return stream_id, int(seq)
