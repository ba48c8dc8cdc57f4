"""Nothing is lost between requests: a kept-alive connection stays open as long as the MCP SDK's
client (httpx) keeps it for reuse.

uvicorn closes an idle connection after 5 s, and httpx reuses one idle up to 5 s: a call sent
as the server closes the connection is reset (``ReadError``) and, a POST, never retried. The
crosstalk bench (``bench/crosstalk.py``) and a sweep of idle gaps near 5 s lost calls that way.
The protocol now keeps an idle connection longer than the client's pool does, on both parsers.
"""

from __future__ import annotations

import asyncio

from httpx2._config import DEFAULT_LIMITS

from tests._support.hostile import serving

HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


async def _reused_after_the_clients_idle_time(http_parser: str) -> bytes:
    """The status line of a second request sent on one connection after the pool's idle time."""
    idle = DEFAULT_LIMITS.keepalive_expiry
    assert idle is not None
    async with serving(http_parser=http_parser) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            async with asyncio.timeout(idle + 10):
                writer.write(HEALTH)
                await _response(reader)
                await asyncio.sleep(idle + 0.25)  # the longest a pooled connection sits before reuse, and some
                writer.write(HEALTH)
                return (await reader.readline()).strip()
        finally:
            writer.close()


async def test_a_kept_alive_connection_outlives_the_clients_pool_on_both_parsers() -> None:
    answers = await asyncio.gather(*(_reused_after_the_clients_idle_time(p) for p in ("h11", "httptools")))
    # Was [b"", b""]: the server had closed both connections at 5 s, under the client's feet.
    assert answers == [b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK"]
