"""Transports to upstream servers reached by URL: the SDK's Streamable HTTP and legacy SSE clients.

Streamable HTTP is bounded by ``max_message_bytes``: a JSON body past it ends with
``BodyTooLarge`` (the SDK fails that request with a ``PARSE_ERROR`` naming it), an SSE event
past it with the SDK's own ``max_sse_event_size`` error. The legacy SSE client keeps the SDK's
default event bound (1 MiB); its POSTs are answered with no body.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import httpx2
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from apcore_mcp.upstream.config.parse import ServerSpec

S = TypeVar("S")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
TOO_LARGE_TEXT = "larger than upstream_max_message_bytes"
"""In ``BodyTooLarge``'s message, which the SDK passes on in a ``PARSE_ERROR``."""


def remote_transport(spec: ServerSpec, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> Transport:
    """The SDK transport for a URL ``spec``. Only the config's own headers are sent: never a caller's."""
    assert spec.url is not None
    if spec.transport == "sse":
        return sse_client(spec.url, headers=headers_of(spec), timeout=spec.timeout)
    http = httpx2.AsyncClient(
        headers=headers_of(spec),
        timeout=httpx2.Timeout(spec.timeout, read=300.0),
        event_hooks={"response": [_bound_body(max_message_bytes)]},
    )
    return _owning(http, streamable_http_client(spec.url, http_client=http, max_sse_event_size=max_message_bytes))


def headers_of(spec: ServerSpec) -> dict[str, str]:
    """The config's headers; for one caller's connection (``spec.bearer``: a token exchanged for theirs)
    its ``Authorization`` replaces any the config gives (that one is for listing the tools)."""
    headers = dict(spec.headers)
    if spec.bearer is not None:
        headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {spec.bearer}"
    return headers


class BodyTooLarge(httpx2.StreamError):
    """A response body (not an event stream) passed ``upstream_max_message_bytes``."""


def _bound_body(limit: int) -> Callable[[httpx2.Response], Awaitable[None]]:
    """A response hook: bodies other than event streams (bounded per event by the SDK) end past ``limit``."""

    async def hook(response: httpx2.Response) -> None:
        stream = response.stream
        if isinstance(stream, httpx2.AsyncByteStream) and not _is_event_stream(response):
            response.stream = _BoundedBody(stream, limit)

    return hook


def _is_event_stream(response: httpx2.Response) -> bool:
    return response.headers.get("content-type", "").lower().startswith("text/event-stream")


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise BodyTooLarge(f"response body {TOO_LARGE_TEXT} ({self._limit})")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def _owning(http: httpx2.AsyncClient, transport: contextlib.AbstractAsyncContextManager[S]) -> AsyncIterator[S]:
    async with http, transport as streams:
        yield streams
