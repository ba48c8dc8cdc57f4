"""A slow client on a raw socket: what the server's header and body deadlines are tested with."""

from __future__ import annotations

import asyncio
import contextlib
import time


async def trickle(
    url: str, head: bytes, tail: bytes = b"", *, every: float | None = None, limit: float = 20.0
) -> tuple[bytes, float]:
    """A slow client: ``head`` at once, then one byte of ``tail`` each time the server stays silent
    for ``every`` seconds (no more bytes when ``every`` is None or ``tail`` runs out).

    What the server sent until it closed the connection (or ``limit`` seconds), and when it closed.
    """
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    started = time.monotonic()
    writer.write(head)
    pending = iter(tail)
    answer = b""
    try:
        while (left := limit - (time.monotonic() - started)) > 0:
            try:
                chunk = await asyncio.wait_for(reader.read(4096), min(every or left, left))
            except TimeoutError:
                if (byte := next(pending, None)) is not None:
                    writer.write(bytes([byte]))
                    with contextlib.suppress(ConnectionError):
                        await writer.drain()
                continue
            except ConnectionError:
                break
            if not chunk:
                break
            answer += chunk
    finally:
        writer.close()
    return answer, time.monotonic() - started
