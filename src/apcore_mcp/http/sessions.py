"""Streamable HTTP sessions: a cap per caller on top of the SDK's global cap, and an exact count.

The SDK's session manager caps the sessions of the whole server (``max_sessions``) and reaps
idle ones (``session_idle_timeout``); with only that, one client can fill the server and
every other client is refused until its sessions expire. ``SessionManager`` also caps each
caller (``principal_key``) and knows, at every moment, how many sessions are open: every
session the SDK admitted, whether or not its client sent ``notifications/initialized``.

With ``events`` (resumable streams) each session's transport gets an event store of its own
(``http/events.py``), closed when the session ends: the SDK's manager would give every
transport the one store it was built with, so any session could replay another's streams.

It hooks three private methods of the SDK's manager (``_handle_stateful_request``,
``_admit_session``, ``_discard_session``; mcp 2.3): the only places where a session is
admitted and forgotten; and sets the new transport's ``_event_store``, read only when it
serves a request. ``tests/hostile/test_sessions.py`` pins the behaviour.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from apcore_mcp.calls.limits import TOO_MANY_SESSIONS, principal_key
from apcore_mcp.http.body import send_json
from apcore_mcp.http.events import ResumeStore
from apcore_mcp.http.metrics import REASON_SCOPE_KEY

logger = logging.getLogger(__name__)

_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode()
_opening_for: ContextVar[str | None] = ContextVar("apcore_mcp_opening_for", default=None)


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's manager with ``max_per_caller`` sessions per caller and an exact ``session_count``."""

    def __init__(
        self,
        app: Any,
        *,
        max_per_caller: int,
        key_of: Callable[[Scope], str] = principal_key,
        events: ResumeStore | None = None,
        **options: Any,
    ) -> None:
        if options.get("event_store") is not None:
            raise TypeError("pass events=ResumeStore(...): one event_store for all sessions lets any replay another's")
        super().__init__(app, **options)
        self.max_per_caller = max_per_caller
        self.key_of = key_of
        self.events = events
        self._owners: dict[str, str] = {}
        self._held: Counter[str] = Counter()

    @property
    def session_count(self) -> int:
        """Sessions open now, initialized or not (a stateless manager has none)."""
        return len(self._owners)

    def sessions_of(self, caller: str) -> int:
        return self._held[caller]

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = self.key_of(scope)
        opening = not any(key == _SESSION_HEADER for key, _ in scope["headers"])
        if opening and self._held[caller] >= self.max_per_caller:
            await self._refuse(scope, send)
            return
        if opening and self.max_sessions is not None and len(self._owners) >= self.max_sessions:
            scope[REASON_SCOPE_KEY] = "session_limit"  # the SDK answers 503 (server full) itself
        token = _opening_for.set(caller if opening else None)
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            _opening_for.reset(token)

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        # Runs under the SDK's session-creation lock: the check and the count are atomic.
        caller = _opening_for.get()
        if caller is None or self._held[caller] >= self.max_per_caller:
            return None
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._owners[transport.mcp_session_id] = caller
            self._held[caller] += 1
            if self.events is not None:
                transport._event_store = self.events.open(transport.mcp_session_id)
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        caller = self._owners.pop(session_id, None)
        if caller is not None:
            self._held[caller] -= 1
            if not self._held[caller]:
                del self._held[caller]
        if self.events is not None:
            self.events.close(session_id)
        await super()._discard_session(session_id, transport)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        logger.warning("Refusing a new session: the caller already holds %d", self.max_per_caller)
        scope[REASON_SCOPE_KEY] = "session_limit"
        error = {
            "code": TOO_MANY_SESSIONS,
            "message": f"Too many open sessions for this caller ({self.max_per_caller})",
        }
        await send_json(send, 429, {"jsonrpc": "2.0", "id": None, "error": error})
