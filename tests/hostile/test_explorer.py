"""The explorer's door for calls (``/explorer/mcp``): its own origin only (CVE-2025-49596), a token whenever
the bind is not loopback."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from apcore_mcp.http.app import create_app
from apcore_mcp.settings import Settings

from tests._support.hostile import explorer_call, serving, uvicorn_told
from tests._support.hostile_modules import hostile_registry


async def test_only_the_pages_own_origin_may_call_tools_on_loopback_without_a_token() -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient() as http:
        port = int(url.rsplit(":", 1)[1])

        async def call(**headers: str) -> int:
            return (await explorer_call(http, url, "hostile.echo", headers=headers)).status_code

        assert await call(Origin="http://localhost:3000") == 403  # another local app's page: was 200
        assert await call(Origin=f"http://127.0.0.1:{port + 1}") == 403
        assert await call(Origin=f"https://127.0.0.1:{port}") == 403
        assert await call(Origin=f"http://127.0.0.1:{port}", **{"Sec-Fetch-Site": "same-site"}) == 403
        assert await call(Origin=f"http://127.0.0.1:{port}", **{"Sec-Fetch-Site": "same-origin"}) == 200
        assert await call(Origin=f"http://LOCALHOST:{port}", Host=f"localhost:{port}") == 200
        assert await call() == 200  # not a browser (curl, a script): no Origin to check; no token on loopback
        assert (await http.get(f"{url}/explorer/config")).json()["tokenRequired"] is False


async def test_a_server_told_to_bind_every_interface_demands_a_token(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="apcore_mcp")
    settings = Settings(explorer=True, allow_execute=True)  # no host setting: 127.0.0.1 as far as it knows
    assert settings.host == "127.0.0.1"
    async with uvicorn_told("0.0.0.0", create_app(hostile_registry(), settings)) as url, httpx.AsyncClient() as http:
        refused = await explorer_call(http, url, "hostile.echo")
        assert refused.status_code == 401  # ran files.purge with no token before
        assert (await http.get(f"{url}/explorer/config")).json()["tokenRequired"] is True
        path = Path(next(m for m in caplog.messages if "token for this run in" in m).rsplit(" ", 1)[1])
        token = path.read_text()
        assert path.stat().st_mode & 0o077 == 0  # the owner's alone
        assert not any(token in message for message in caplog.messages)  # the log names the file, not the token
        path.unlink()
        allowed = await explorer_call(http, url, "hostile.echo", headers={"Authorization": f"Bearer {token}"})
        assert allowed.status_code == 200
    warning = next(m for m in caplog.messages if m.startswith("Listening on 0.0.0.0"))
    for exposed in ("/mcp and /sse run", "no authentication", "the explorer at /explorer/ runs tools", "/metrics"):
        assert exposed in warning


async def test_a_loopback_bind_logs_no_exposure_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="apcore_mcp")
    async with (
        uvicorn_told("127.0.0.1", create_app(hostile_registry(), Settings(explorer=True, allow_execute=True))) as url,
        httpx.AsyncClient() as http,
    ):
        assert (await explorer_call(http, url, "hostile.echo")).status_code == 200
    assert not [m for m in caplog.messages if "reachable from other machines" in m]


async def test_a_configured_token_always_applies() -> None:
    settings = {"explorer": True, "allow_execute": True, "execute_token": "t" * 20}
    async with serving(**settings) as (url, _), httpx.AsyncClient() as http:
        assert (await explorer_call(http, url, "hostile.echo")).status_code == 401
        headers = {"Authorization": "Bearer " + "t" * 20}
        assert (await explorer_call(http, url, "hostile.echo", headers=headers)).status_code == 200
