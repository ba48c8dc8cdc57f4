"""The httptools parser (the default where installed) keeps the header deadline, the body deadline and
the 431 bound, on kept-alive and pipelined connections too: uvicorn's own httptools protocol has no
header deadline and buffers a head that never ends without bound (the app's check sees complete heads only)."""

from __future__ import annotations

import asyncio

from tests._support.hostile import metric, metrics_text, serving
from tests._support.slow_client import trickle

HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
SLOW_HEAD = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
SLOW_TAIL = b"X-Slow: " + b"a" * 100


def statuses(answer: bytes) -> list[bytes]:
    """The status codes of the responses in ``answer``, in order."""
    return [part[:3] for part in answer.split(b"HTTP/1.1 ")[1:]]


async def answered_then(url: str, then: bytes) -> bytes:
    """A /health request answered on a raw connection, then ``then`` sent on it: all the server
    sends until it closes (bounded)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(HEALTH)
        async with asyncio.timeout(10):
            answer = await reader.readuntil(b"\r\n\r\n")
            length = int(answer.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            answer += await reader.readexactly(length)
            writer.write(then)
            return answer + await reader.read()
    finally:
        writer.close()


async def test_the_next_head_on_a_kept_alive_connection_is_timed_after_each_response() -> None:
    async with serving(header_timeout=1.0, http_parser="httptools") as (url, _):
        # One answered request, then one whose head trickles in: cut after the response, not never.
        answer, took = await trickle(url, HEALTH + SLOW_HEAD, SLOW_TAIL, every=0.25)
        # Two pipelined in one write, then a third trickling: both answered, the third cut.
        pipelined, _ = await trickle(url, HEALTH + HEALTH + SLOW_HEAD, SLOW_TAIL, every=0.25)
        text = await metrics_text(url)
    assert statuses(answer) == [b"200", b"408"]  # was [200] and held open until the client gave up
    assert took < 10
    assert statuses(pipelined) == [b"200", b"200", b"408"]
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="header_timeout") == 2


async def test_a_first_head_trickling_in_and_a_body_trickling_in_are_answered_408() -> None:
    async with serving(header_timeout=1.0, body_timeout=1.0, http_parser="httptools") as (url, _):
        head, _ = await trickle(url, SLOW_HEAD, SLOW_TAIL, every=0.25)
        post = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
        body, _ = await trickle(url, post, b"{" * 200, every=0.25)
        text = await metrics_text(url)
    assert statuses(head) == [b"408"]
    assert statuses(body) == [b"408"]
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="header_timeout") == 1
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="body_timeout") == 1


async def test_a_70_kb_head_is_431_before_it_ends_first_or_after_a_request_on_the_same_connection() -> None:
    big = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 70_000  # and no end
    async with serving(http_parser="httptools") as (url, _):
        first, _ = await trickle(url, big, limit=5)
        after = await answered_then(url, big)
        text = await metrics_text(url)
    assert statuses(first) == [b"431"]  # was no answer, the head buffered whole
    assert first.endswith(b'{"error": "Request headers exceed 16384 bytes"}')
    assert statuses(after) == [b"200", b"431"]
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="headers_too_large") == 2
