"""Slow clients are cut off by header and body deadlines, and 1,100 of them do not starve /health."""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from pathlib import Path

import httpx
import pytest

from tests._support.hostile import error_lines, metric, metrics_text, server_process, serving
from tests._support.slow_client import trickle

SLOW_SOCKETS = 1_100
PARSERS = pytest.mark.parametrize("http_parser", ["h11", "httptools"])  # each timed protocol


@PARSERS
async def test_a_body_trickling_in_is_answered_408_at_the_deadline(http_parser: str) -> None:
    async with serving(body_timeout=1.0, http_parser=http_parser) as (url, _):
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
        answer, took = await trickle(url, head, b"{" * 200, every=0.25)  # was never cut off
        text = await metrics_text(url)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert 0.9 < took < 10
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="body_timeout") == 1


@PARSERS
async def test_headers_trickling_in_are_cut_off_at_the_deadline(http_parser: str) -> None:
    async with serving(header_timeout=1.0, http_parser=http_parser) as (url, _):
        answer, took = await trickle(url, b"GET /health HTTP/1.1\r\n", b"X-Slow: " + b"a" * 100, every=0.25)
        text = await metrics_text(url)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert 0.9 < took < 10
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="header_timeout") == 1


@pytest.mark.slow
async def test_1100_slow_sockets_do_not_starve_health(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * SLOW_SOCKETS
    if soft < wanted:  # the server process inherits this limit (and raises its own to the hard one)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    log = tmp_path / "server.log"
    with server_process("header_timeout=4", "log_level=WARNING", log=log) as (_, url):
        host, port = url.removeprefix("http://").split(":")
        connections = []
        for _ in range(SLOW_SOCKETS):
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never more
            connections.append((reader, writer))
        opened = time.monotonic()
        latencies = []
        async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            for _ in range(200):  # a new connection each time: accept() must still get a descriptor
                started = time.perf_counter()
                assert (await http.get(f"{url}/health")).status_code == 200
                latencies.append(time.perf_counter() - started)
        cut = await asyncio.gather(*(asyncio.wait_for(reader.read(), 15) for reader, _ in connections))
        closed_after = time.monotonic() - opened
        for _, writer in connections:
            writer.close()
        text = await metrics_text(url)
    p99 = statistics.quantiles(latencies, n=100)[98]
    print(
        f"\n/health with {SLOW_SOCKETS} slow sockets open: p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms; slow sockets cut after {closed_after:.1f}s"
    )
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in cut)
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="header_timeout") == SLOW_SOCKETS
    assert error_lines(log.read_text()) == []
