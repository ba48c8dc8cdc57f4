"""The shipped nginx config in front: slow clients cut off, the explorer's own origin intact."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests._support.hostile import explorer_call, nginx_in_front, server_process
from tests._support.slow_client import trickle

pytestmark = [pytest.mark.nginx, pytest.mark.slow]


async def test_nginx_cuts_slow_headers_and_pausing_bodies_and_the_service_cuts_trickling_ones(tmp_path: Path) -> None:
    with (
        server_process("body_timeout=2", "explorer=true", "allow_execute=true", log=tmp_path / "server.log") as (_, up),
        nginx_in_front(up, tmp_path, client_header_timeout="1s", client_body_timeout="1s") as url,
    ):
        _, headers_cut = await trickle(url, b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        post = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"
        _, pause_cut = await trickle(url, post + b"{")
        trickled, trickle_cut = await trickle(url, post + b"{", b"x" * 100, every=0.3)  # never pauses 1 s: nginx waits
        assert 0.9 < headers_cut < 5 and 0.9 < pause_cut < 5  # before: never cut off
        assert trickled.startswith(b"HTTP/1.1 408 ") and 1.9 < trickle_cut < 8  # the service's total deadline
        async with httpx.AsyncClient() as http:
            port = url.rsplit(":", 1)[1]
            own = await explorer_call(http, url, "hostile.echo", headers={"Origin": f"http://127.0.0.1:{port}"})
            assert own.status_code == 200  # nginx passes Host with its port: the page's own origin matches
