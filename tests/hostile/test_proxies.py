"""Forwarded headers name the client only when a listed proxy sent them: per-caller limits count real callers.

The service runs as operators start it: the documented ``uvicorn app:create_app --factory`` (docs/service.md)
command exactly as written there (its variables and flags), the ``apcore-mcp`` CLI, and the
Dockerfile's command and environment; each a process of its own on a free 127.0.0.1 port. Without ``forwarded_allow_ips`` a client on
127.0.0.1 writing a new ``X-Forwarded-For``/``Forwarded`` into each request is still one caller
(uvicorn alone trusts loopback peers); with it, the listed proxy's word is taken, through a
real nginx too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from apcore_mcp.calls.limits import RATE_LIMITED, TOO_MANY_SESSIONS
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.testing import free_port

from tests._support.deploy import nginx_running, point_nginx_conf
from tests._support.hostile import ACCEPT, INIT, modern_headers, tool_call
from tests._support.services import STYLES, TOOL, service

REPO = Path(__file__).resolve().parents[2]
# -- calls -------------------------------------------------------------------------------------


async def call(http: httpx.AsyncClient, url: str, headers: Mapping[str, str] | None = None) -> bool:
    """One 2026-07-28 ``tools/call`` (no session): True if it ran, False if the rate limit refused it."""
    body = tool_call(1, TOOL, {"text": "a b"}, modern=True)
    response = await http.post(
        f"{url}/mcp", json=body, headers={**modern_headers("tools/call", TOOL), **(headers or {})}
    )
    assert response.status_code == 200, response.text
    refused = f'"code":{RATE_LIMITED}' in response.text.replace(" ", "")
    assert refused or '"result"' in response.text, response.text
    return not refused


def spoofed(index: int) -> dict[str, str]:
    """A new caller's name in each request, in every form a proxy writes."""
    forms = [
        {"X-Forwarded-For": f"198.51.100.{index}"},
        {"Forwarded": f"for=198.51.100.{index}"},
        {"X-Forwarded-For": f"2001:db8::{index:x}"},
        {"Forwarded": f'for="[2001:db8::{index:x}]:4711";proto=https'},
        {"X-Forwarded-For": f"203.0.113.{index}, 198.51.100.{index}", "X-Forwarded-Proto": "https"},
    ]
    return forms[index % len(forms)]


# -- an unlisted peer: headers ignored ---------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_a_rate_limited_client_cannot_become_new_callers_by_writing_forwarded_headers(
    style: str, tmp_path: Path
) -> None:
    rate, burst = 2, 2
    settings = {"APCORE_MCP_RATE_LIMIT": str(rate), "APCORE_MCP_RATE_BURST": str(burst)}
    with service(style, tmp_path / "server.log", settings) as (url, _):
        async with httpx.AsyncClient(timeout=10) as http:
            started = time.monotonic()
            ran = [await call(http, url, spoofed(index)) for index in range(20)]
            elapsed = time.monotonic() - started
    # before: 20/20 ran, each header value a caller of its own
    assert sum(ran) <= burst + int(elapsed * rate), f"{sum(ran)}/20 calls ran in {elapsed:.2f}s"


@pytest.mark.parametrize("style", STYLES)
async def test_the_sessions_per_caller_cap_holds_whatever_forwarded_headers_say(style: str, tmp_path: Path) -> None:
    with (
        service(style, tmp_path / "server.log", {"APCORE_MCP_MAX_SESSIONS_PER_CALLER": "3"}) as (url, _),
    ):
        async with httpx.AsyncClient(timeout=10) as http:
            answers = [await http.post(f"{url}/mcp", json=INIT, headers={**ACCEPT, **spoofed(i)}) for i in range(10)]
    statuses = [answer.status_code for answer in answers]
    assert statuses == [200] * 3 + [429] * 7, statuses  # before: ten sessions
    assert str(TOO_MANY_SESSIONS) in answers[-1].text


# -- a listed proxy: its word is taken ---------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
async def test_a_listed_proxy_names_the_client_by_x_forwarded_for_or_forwarded(style: str, tmp_path: Path) -> None:
    settings = {
        "APCORE_MCP_RATE_LIMIT": "0.2",
        "APCORE_MCP_RATE_BURST": "2",
        "APCORE_MCP_FORWARDED_ALLOW_IPS": "127.0.0.1",
    }
    with service(style, tmp_path / "server.log", settings) as (url, _):
        async with httpx.AsyncClient(timeout=10) as http:
            proxy_itself = [await call(http, url) for _ in range(3)]  # the peer's own bucket, used up
            alice = [await call(http, url, {"X-Forwarded-For": "203.0.113.7"}) for _ in range(3)]
            bob = [await call(http, url, {"Forwarded": 'for="[2001:db8::7]:4711";proto=https'}) for _ in range(2)]
            # the listed proxy's own hop is skipped: the client is the last address left of it
            carol = await call(http, url, {"X-Forwarded-For": "198.51.100.9, 127.0.0.1"})
            # X-Forwarded-For is the one a proxy sets; a client's own Forwarded, passed along, is not read
            alice_again = await call(http, url, {"X-Forwarded-For": "203.0.113.7", "Forwarded": "for=192.0.2.1"})
    assert proxy_itself == [True, True, False]
    assert alice == [True, True, False]
    assert bob == [True, True]  # before: Forwarded not read, so bob was the proxy (refused)
    assert carol is True
    assert alice_again is False


# -- the real nginx of deploy/ in front --------------------------------------------------------

NGINX_SOURCE = "127.0.0.5"  # nginx connects from here (proxy_bind): the one address listed


@pytest.mark.nginx
@pytest.mark.slow
async def test_behind_nginx_callers_are_the_addresses_nginx_saw(tmp_path: Path) -> None:
    settings = {
        "APCORE_MCP_RATE_LIMIT": "0.2",
        "APCORE_MCP_RATE_BURST": "2",
        "APCORE_MCP_FORWARDED_ALLOW_IPS": NGINX_SOURCE,
    }
    with service("readme", tmp_path / "server.log", settings) as (upstream, _):
        nginx_port = free_port()
        conf = point_nginx_conf(
            (REPO / "deploy" / "nginx.conf").read_text(),
            nginx_port,
            {"apcore-mcp:8000": upstream.removeprefix("http://")},
        )
        conf = conf.replace(
            f"listen 127.0.0.1:{nginx_port};", f"listen 127.0.0.1:{nginx_port}; proxy_bind {NGINX_SOURCE};"
        )
        with nginx_running(conf, tmp_path, nginx_port):
            proxied = f"http://127.0.0.1:{nginx_port}"

            async def calls_from(source: str, base: str) -> list[bool]:
                transport = httpx.AsyncHTTPTransport(local_address=source)
                async with httpx.AsyncClient(transport=transport, timeout=10) as http:
                    # each request claims a new address: nginx appends the real one, which is what counts
                    return [await call(http, base, {"X-Forwarded-For": f"192.0.2.{index}"}) for index in range(3)]

            first = await calls_from("127.0.0.2", proxied)
            second = await calls_from("127.0.0.3", proxied)
            direct = await calls_from("127.0.0.1", upstream)  # not nginx: its headers are not believed
    assert first == [True, True, False]
    assert second == [True, True, False]  # before: one caller, nginx, for everyone
    assert direct == [True, True, False]


# -- the middleware and the setting, in process ------------------------------------------------


def _echo_app(trusted: Sequence[str]) -> Any:
    from apcore_mcp.http.forwarded import ForwardedClient, TrustedProxies

    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        body = json.dumps({"client": list(scope["client"]), "scheme": scope["scheme"]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    return ForwardedClient(echo, TrustedProxies(trusted))


async def seen_by(app: Any, peer: tuple[str, int], headers: dict[str, str]) -> dict[str, Any]:
    """What ``app`` saw of a GET from ``peer`` carrying ``headers``: its client and scheme."""
    transport = httpx.ASGITransport(app=app, client=peer)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        answer: dict[str, Any] = (await http.get("/", headers=headers)).json()
    return answer


TRUSTED = ["127.0.0.1", "10.0.0.0/8", "::1"]
CASES = [
    # (peer, headers, expected client host, expected scheme)
    ("192.0.2.50", {"X-Forwarded-For": "198.51.100.1"}, "192.0.2.50", "http"),
    ("192.0.2.50", {"Forwarded": "for=198.51.100.1", "X-Forwarded-Proto": "https"}, "192.0.2.50", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.1, 198.51.100.1"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1, 10.2.3.4"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "10.9.9.9, 10.2.3.4"}, "10.9.9.9", "http"),
    ("10.1.2.3", {"X-Forwarded-For": "[2001:db8::1]:8080", "X-Forwarded-Proto": "https"}, "2001:db8::1", "https"),
    ("::1", {"X-Forwarded-For": "2001:DB8::2"}, "2001:db8::2", "http"),
    ("::ffff:127.0.0.1", {"X-Forwarded-For": "198.51.100.1"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"Forwarded": 'for=192.0.2.60;proto=https;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"'},
     "2001:db8:cafe::17", "http"),
    ("127.0.0.1", {"Forwarded": 'For="[2001:db8:cafe::17]:4711";Proto=HTTPS'}, "2001:db8:cafe::17", "https"),
    ("127.0.0.1", {"Forwarded": "for=_hidden, for=10.0.0.1"}, "_hidden", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1", "Forwarded": "for=192.0.2.1"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "not-an-address"}, "127.0.0.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1, not-an-address"}, "127.0.0.1", "http"),
    # what the client wrote left of the hop its proxy appended does not make it the proxy
    ("127.0.0.1", {"X-Forwarded-For": "not-an-address, 198.51.100.1"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "1.2.3.4:99999, 198.51.100.1, 10.2.3.4"}, "198.51.100.1", "http"),
    ("127.0.0.1", {"Forwarded": 'for="garbage;by=x, for=198.51.100.1'}, "127.0.0.1", "http"),
    ("127.0.0.1", {"Forwarded": "for=garbage, for=198.51.100.1;proto=https"}, "198.51.100.1", "https"),
    ("127.0.0.1", {"Forwarded": "for=198.51.100.1, for=garbage"}, "127.0.0.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1:99999"}, "127.0.0.1", "http"),
    ("127.0.0.1", {"Forwarded": "by=203.0.113.43"}, "127.0.0.1", "http"),
    ("127.0.0.1", {"Forwarded": 'for="198.51.100.1'}, "127.0.0.1", "http"),
    ("127.0.0.1", {"X-Forwarded-Proto": "https"}, "127.0.0.1", "http"),
    ("127.0.0.1", {"X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "javascript"}, "198.51.100.1", "http"),
]  # fmt: skip


@pytest.mark.parametrize(("peer", "headers", "client", "scheme"), CASES)
async def test_the_client_a_peer_may_name(peer: str, headers: dict[str, str], client: str, scheme: str) -> None:
    seen = await seen_by(_echo_app(TRUSTED), (peer, 40000), headers)
    assert (seen["client"][0], seen["scheme"]) == (client, scheme)


async def test_nothing_is_trusted_by_default() -> None:
    seen = await seen_by(
        _echo_app(Settings().forwarded_allow_ips), ("127.0.0.1", 40000), {"X-Forwarded-For": "198.51.100.1"}
    )
    assert seen["client"] == ["127.0.0.1", 40000]


@pytest.mark.parametrize("entry", ["*", "", "example.com", "10.0.0.5/8", "127.0.0.1/33", "[::1]"])
def test_forwarded_allow_ips_takes_addresses_and_networks_only(entry: str) -> None:
    with pytest.raises(SettingError) as refused:
        Settings(forwarded_allow_ips=(entry,))
    assert refused.value.field == "forwarded_allow_ips"


def test_forwarded_allow_ips_accepts_ipv4_ipv6_and_networks() -> None:
    settings = Settings(forwarded_allow_ips=(" 127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"))
    assert settings.forwarded_allow_ips == ("127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8")


async def test_a_client_already_rewritten_by_uvicorn_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    # uvicorn without --no-proxy-headers names the client from X-Forwarded-For with port 0
    app = _echo_app(())
    for _ in range(2):
        await seen_by(app, ("198.51.100.1", 0), {"X-Forwarded-For": "198.51.100.1"})
    warnings = [record.getMessage() for record in caplog.records if "--no-proxy-headers" in record.getMessage()]
    assert len(warnings) == 1, warnings  # once
