"""deploy/nginx-host.conf, the plain-host site of docs/deploy.md, run for real (marker ``nginx``).

The site is included into an nginx.conf the way a distribution's includes ``conf.d/*.conf``
inside ``http { }`` (with the distribution's ``gzip on``), in front of the page's own server
command; only the ports change, to free ones on 127.0.0.1. Through it, a streamed call works in
both protocol eras, Host reaches the service's allow-list and ``/metrics`` stays private; and the site
keeps the locations and client limits of deploy/nginx.conf (the two files do not drift apart).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from apcore_mcp.testing import free_port

from tests._support.deploy import (
    DEPLOY,
    REPO,
    STARTUP_SECONDS,
    clean_env,
    log_tail,
    nginx_running,
    point_nginx_conf,
    running,
)
from tests._support.processes import wait_ok
from tests.deploy.test_deploy import NGINX_CONF, nginx_locations

HOST_CONF = DEPLOY / "nginx-host.conf"
PAGE = REPO / "docs" / "deploy.md"
MARK = "<!-- run by: tests/deploy/test_deploy_host.py -->"
DOCUMENTED_UPSTREAM = "127.0.0.1:8000"
CALL_SECONDS = 30
LIMITS = (
    "client_header_timeout",
    "client_body_timeout",
    "send_timeout",
    "reset_timedout_connection",
    "large_client_header_buffers",
    "limit_conn_status",
    "client_max_body_size",
)
# What a distribution's nginx.conf puts around its sites (Debian's turns gzip on for every type).
DISTRIBUTION_CONF = """\
worker_processes 1;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    gzip on;
    gzip_types *;
    gzip_min_length 1;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    include conf.d/*.conf;
}
"""


@dataclass(frozen=True)
class Site:
    url: str  # nginx
    name: str  # the site's server_name, which the service's --allowed-hosts lists


def documented_command() -> list[str]:
    """The page's server command, from this venv, on a free port instead of the default 8000."""
    found = re.findall(rf"{re.escape(MARK)}\n```bash\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(found) == 1, f"expected one marked bash block in {PAGE.name}, found {len(found)}"
    argv = shlex.split(found[0].strip())
    assert argv[0] == ".venv/bin/apcore-mcp" and "--port" not in argv  # the default port: the site's upstream
    return [str(Path(sys.executable).parent / "apcore-mcp"), *argv[1:]]


def server_name(conf: str) -> str:
    names = re.findall(r"^\s*server_name\s+([^;\s]+);", conf, re.MULTILINE)
    assert len(names) == 1, names
    return str(names[0])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("nginx-host")
    upstream_port, nginx_port = free_port(), free_port()
    conf = HOST_CONF.read_text()
    directives = [line.split("#")[0].strip() for line in conf.splitlines()]
    assert [d for d in directives if DOCUMENTED_UPSTREAM in d] == [f"server {DOCUMENTED_UPSTREAM};"]
    site_conf = point_nginx_conf(conf, nginx_port, {DOCUMENTED_UPSTREAM: f"127.0.0.1:{upstream_port}"})
    (tmp / "nginx" / "conf.d").mkdir(parents=True)
    (tmp / "nginx" / "conf.d" / "apcore-mcp.conf").write_text(site_conf)
    argv = [*documented_command(), "--port", str(upstream_port)]
    server_log = tmp / "server.log"
    with running(argv, server_log, env=clean_env()) as server:
        wait_ok(f"http://127.0.0.1:{upstream_port}/health", server, STARTUP_SECONDS, lambda: log_tail(server_log))
        with nginx_running(DISTRIBUTION_CONF, tmp, nginx_port):
            yield Site(f"http://127.0.0.1:{nginx_port}", server_name(conf))


@asynccontextmanager
async def client_of(site: Site, mode: str, **callbacks: Any) -> AsyncIterator[Client]:
    """An SDK client of the site's /mcp in ``mode``, sending the site's name as Host."""
    async with create_mcp_http_client(headers={"Host": site.name}) as http:
        transport = streamable_http_client(f"{site.url}/mcp", http_client=http)
        async with Client(transport, mode=mode, cache=None, **callbacks) as client:
            yield client


@pytest.mark.nginx
@pytest.mark.parametrize(("mode", "era"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_a_streamed_call_through_the_host_site_in_each_era(site: Site, mode: str, era: str) -> None:
    """reports.chart asks for a title, then reports progress per bar: in 2025-11-25 the question
    arrives in the middle of the call's event stream, so a proxy holding events back would hang it."""
    asked: list[str] = []
    reported: list[float] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"title": "via nginx"})

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    with anyio.fail_after(CALL_SECONDS):  # a proxy holding the question back: the call never ends
        async with client_of(site, mode, elicitation_callback=answer) as client:
            assert client.protocol_version == era
            result = await client.call_tool("reports.chart", {"values": [1, 3, 2]}, progress_callback=on_progress)
    assert result.is_error is False, result
    assert result.structured_content is not None
    assert (result.structured_content["title"], result.structured_content["maximum"]) == ("via nginx", 3)
    assert asked == ["What title should the chart have?"]
    assert reported == [1, 2, 3]


@pytest.mark.nginx
def test_the_host_site_passes_host_to_the_allow_list_and_keeps_metrics_private(site: Site) -> None:
    allowed = httpx.get(f"{site.url}/health", headers={"Host": site.name}, timeout=5)
    assert allowed.status_code == 200 and allowed.json()["module_count"] == 5
    refused = httpx.post(f"{site.url}/mcp", headers={"Host": "evil.example"}, json={}, timeout=5)
    assert refused.status_code == 421  # the service's allow-list, reached through the site
    assert httpx.get(f"{site.url}/metrics", headers={"Host": site.name}, timeout=5).status_code == 404


def test_the_host_site_proxies_and_cuts_slow_clients_as_the_compose_file_does() -> None:
    """The two files do not drift apart: the same locations, the same limits on clients."""
    compose, host = NGINX_CONF.read_text(), HOST_CONF.read_text()
    assert nginx_locations(host) == nginx_locations(compose)
    for directive in LIMITS:
        wanted = re.findall(rf"^\s*({directive}\s[^;]*;)", compose, re.MULTILINE)
        assert len(wanted) == 1 and wanted == re.findall(rf"^\s*({directive}\s[^;]*;)", host, re.MULTILINE), directive
    assert re.search(r"^\s*limit_conn \w+ 64;", host, re.MULTILINE)
