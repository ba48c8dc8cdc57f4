"""Resumable Streamable HTTP streams for handshake-era clients: events kept per session, bounded in bytes.

With an event store, the SDK's transport sends each response stream a priming event (an id and a
``retry`` hint); a client whose stream broke (a proxy timeout, a server that released the stream
of a long call) reconnects with ``GET /mcp`` and ``Last-Event-ID`` and receives what it missed.

- Each session has a store of its own (``SessionEvents``, given to the session's transport by
  ``http/sessions.py`` and closed when the session ends or is reaped): a ``Last-Event-ID`` is
  looked up among the streams of the session presenting it, never another's. The SDK binds a
  session to the principal that opened it, so events are bound to that principal too.
- Event ids are ``<token>.<n>``: a random 128-bit token per stream, then the event's number in it.
- Memory is bounded in bytes by one ``ResumeStore`` for all sessions: ``max_bytes`` together and
  ``stream_max_bytes`` per stream, the oldest events dropped first. Past ``max_bytes`` the session
  holding the most pays, with its own oldest event: one session making many large results
  cannot push every other session's events out. An event is held as its
  serialized JSON (what it costs is what is counted; a replay parses it back) plus a fixed
  overhead per event and per stream; a stream whose events are all dropped is forgotten.
- A cursor that cannot be resumed (not a stream of this session, or events after it were dropped)
  is answered on the resumed stream with one JSON-RPC error, ``RESUME_UNAVAILABLE``, never with a
  partial replay. The SDK client fails the request with it (an empty stream would have it
  reconnect forever); the client sends its request again if it wants the result.
"""

from __future__ import annotations

import itertools
import secrets
from collections import deque
from dataclasses import dataclass

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import ErrorData, JSONRPCError, JSONRPCMessage, jsonrpc_message_adapter
from pydantic_core import PydanticSerializationError

RESUME_UNAVAILABLE = -32013
"""JSON-RPC error code sent on a resumed stream whose ``Last-Event-ID`` cannot be resumed."""

EVENT_OVERHEAD = 320
"""Bytes counted per event beside its JSON: its record, its slots in the stream and the global order
(tracemalloc measured ~310 on CPython 3.11)."""
STREAM_OVERHEAD = 1000
"""Bytes counted per stream: its record, token, queue and index entries (measured ~850)."""


@dataclass(slots=True, eq=False)
class _Event:
    key: int  # position in the store's global order
    stream: _Stream
    seq: int
    data: bytes | None  # the message's JSON; None for a priming event
    size: int


class _Stream:
    __slots__ = ("dropped_through", "events", "next_seq", "owner", "size", "stream_id", "token")

    def __init__(self, owner: SessionEvents, stream_id: StreamId) -> None:
        self.owner = owner
        self.stream_id = stream_id
        self.token = secrets.token_urlsafe(16)
        self.events: deque[_Event] = deque()
        self.size = STREAM_OVERHEAD
        self.next_seq = 1
        self.dropped_through = 0  # events numbered up to this one are gone

    def event_id(self, seq: int) -> EventId:
        return f"{self.token}.{seq}"


class ResumeStore:
    """The events of every session's streams: at most ``max_bytes`` together, ``stream_max_bytes`` per stream."""

    def __init__(self, *, max_bytes: int, stream_max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.stream_max_bytes = stream_max_bytes
        self.held_bytes = 0
        """Bytes counted for the events and streams held now (never above ``max_bytes`` between calls)."""
        self._sessions: dict[str, SessionEvents] = {}
        self._keys = itertools.count()

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    def open(self, session_id: str) -> SessionEvents:
        """The event store of a new session (for its transport only)."""
        events = self._sessions[session_id] = SessionEvents(self)
        return events

    def close(self, session_id: str) -> None:
        """Forget the session's streams and events (it ended); safe to call more than once."""
        events = self._sessions.pop(session_id, None)
        if events is not None:
            events.closed = True
            for stream in list(events.streams.values()):
                while stream.events:
                    self.drop(stream.events[0])

    def stream_of(self, session_id: str, event_id: EventId) -> StreamId | None:
        """The stream ``event_id`` resumes in the session, or None if it cannot be resumed there."""
        events = self._sessions.get(session_id)
        return events.resumable(event_id) if events is not None else None

    def add(self, stream: _Stream, seq: int, data: bytes | None) -> None:
        """Keep an event, then drop the oldest ones while the stream or the store is over its budget."""
        if not stream.events:  # a stream is counted while it holds events
            self.held_bytes += STREAM_OVERHEAD
        event = _Event(next(self._keys), stream, seq, data, EVENT_OVERHEAD + (len(data) if data else 0))
        stream.events.append(event)
        stream.size += event.size
        stream.owner.held_bytes += event.size
        self.held_bytes += event.size
        while stream.size > self.stream_max_bytes and stream.events:
            self.drop(stream.events[0])
        while self.held_bytes > self.max_bytes:
            # The largest holder pays (a scan of at most max_sessions, only while the store is full).
            largest = max(self._sessions.values(), key=lambda session: session.held_bytes, default=None)
            oldest = largest.oldest() if largest is not None else None
            if oldest is None:
                break
            self.drop(oldest)

    def drop(self, event: _Event) -> None:
        """Drop an event, always the oldest of its stream; a stream left empty is forgotten."""
        stream = event.stream
        stream.events.popleft()
        stream.size -= event.size
        stream.owner.held_bytes -= event.size
        self.held_bytes -= event.size
        stream.dropped_through = max(stream.dropped_through, event.seq)  # a skipped event may stand later
        if not stream.events:
            self.held_bytes -= STREAM_OVERHEAD
            stream.owner.forget(stream)


class SessionEvents(EventStore):
    """One session's view of the ``ResumeStore``: its streams only, by stream id and by token."""

    def __init__(self, store: ResumeStore) -> None:
        self.store = store
        self.streams: dict[StreamId, _Stream] = {}
        self.closed = False
        self.held_bytes = 0
        """Bytes of this session's events (its share of the store's)."""
        self._tokens: dict[str, _Stream] = {}

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        stream = self.streams.get(stream_id)
        if stream is None:
            stream = _Stream(self, stream_id)
            self.streams[stream_id] = self._tokens[stream.token] = stream
        seq = stream.next_seq
        stream.next_seq += 1
        if self.closed:  # a session that ended keeps nothing
            return self._skip(stream, seq)
        try:
            data = None if message is None else _encode(message)
        except PydanticSerializationError:  # the wire cannot carry it either: nothing to replay
            return self._skip(stream, seq)
        self.store.add(stream, seq, data)
        return stream.event_id(seq)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        found = self._find(last_event_id)
        if found is None:
            await send_callback(_refusal("it names no stream of this session (or all its events were dropped)"))
            return None
        stream, seq = found
        if seq < stream.dropped_through:
            await send_callback(_refusal("events after it were dropped from the server's resume buffer"))
            return None
        for event in [event for event in stream.events if event.seq > seq]:
            if event.data is not None:
                message = jsonrpc_message_adapter.validate_json(event.data, by_name=False)
                await send_callback(EventMessage(message, stream.event_id(event.seq)))
        return stream.stream_id

    def resumable(self, event_id: EventId) -> StreamId | None:
        """The stream ``event_id`` resumes with nothing missing, else None."""
        found = self._find(event_id)
        if found is None or found[1] < found[0].dropped_through:
            return None
        return found[0].stream_id

    def oldest(self) -> _Event | None:
        """The session's oldest event held, across its streams (a session has few streams at once)."""
        firsts = [stream.events[0] for stream in self.streams.values() if stream.events]
        return min(firsts, key=lambda event: event.key, default=None)

    def forget(self, stream: _Stream) -> None:
        if self.streams.get(stream.stream_id) is stream:
            del self.streams[stream.stream_id]
        self._tokens.pop(stream.token, None)

    def _skip(self, stream: _Stream, seq: int) -> EventId:
        stream.dropped_through = seq
        if not stream.events:
            self.forget(stream)
        return stream.event_id(seq)

    def _find(self, event_id: EventId) -> tuple[_Stream, int] | None:
        token, _, number = event_id.rpartition(".")
        stream = self._tokens.get(token)
        if stream is None or not (number.isascii() and number.isdigit() and len(number) <= 18):
            return None
        seq = int(number)
        return (stream, seq) if seq < stream.next_seq else None


def _encode(message: JSONRPCMessage) -> bytes:
    return jsonrpc_message_adapter.dump_json(message, by_alias=True, exclude_unset=True)


def _refusal(reason: str) -> EventMessage:
    message = f"Cannot resume from this Last-Event-ID: {reason}. Send the request again."
    error = ErrorData(code=RESUME_UNAVAILABLE, message=message)
    return EventMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))
