"""Auth behind a real nginx that serves the app under ``/sub/`` (marker ``nginx``; needs the nginx binary).

The app runs under uvicorn in the test's event loop, nginx as a process on another free
127.0.0.1 port with a configuration generated here: ``/sub/...`` is proxied with the prefix
stripped, and the RFC 9728 location ``/.well-known/oauth-protected-resource/sub/...`` is
forwarded unchanged. Every URL the app hands out must be the proxied one, taken from
``public_url``: the app itself only ever sees ``127.0.0.1`` paths without ``/sub``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.shared.auth_utils import check_resource_allowed

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.auth import ISSUER, JWKS_URL, Issuer, bearer, mcp_client, mock_jwks, role_executor
from tests._support.processes import stop_process
from tests._support.sessions import running_http

pytestmark = pytest.mark.nginx

NGINX_CONF = """
worker_processes 1;
error_log stderr warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    server {{
        listen 127.0.0.1:{listen};
        # The service under /sub/: the prefix is stripped, streams are not buffered.
        location /sub/ {{
            proxy_pass http://127.0.0.1:{upstream}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 60s;
        }}
        # RFC 9728 puts the metadata of https://host/sub/mcp at the host's root: forward it as is.
        location /.well-known/oauth-protected-resource/sub/ {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header Host $host;
        }}
    }}
}}
"""


@dataclass
class Proxied:
    url: str
    """nginx's base URL (the service is at ``{url}/sub``)."""
    issuer: Issuer


def nginx_binary() -> str:
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if path is None:
        pytest.fail("nginx is not installed: apt-get install -y nginx")
    return path


@contextlib.contextmanager
def nginx(tmp_path: Path, listen: int, upstream: int) -> Iterator[subprocess.Popen[bytes]]:
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    (prefix / "nginx.conf").write_text(NGINX_CONF.format(listen=listen, upstream=upstream))
    log = (tmp_path / "nginx.log").open("wb")
    command = [nginx_binary(), "-e", "stderr", "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf"),
               "-g", f"daemon off; pid {prefix}/nginx.pid;"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        stop_process(proc)
        log.close()


async def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Poll ``url`` (without blocking the loop the app runs in) until it answers 200."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"nginx exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url)).status_code == 200:
                    return
            await anyio.sleep(0.05)
    pytest.fail(f"{url} not ready within {timeout}s")


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[Proxied]:
    listen = free_port()
    public = f"http://127.0.0.1:{listen}/sub"
    settings = Settings(auth="jwt", public_url=public, auth_issuer=ISSUER, auth_jwks_url=JWKS_URL)
    bridge = Bridge.build(role_executor(), settings)
    issuer = Issuer()
    with mock_jwks(issuer):
        async with running_http(bridge) as upstream:
            with nginx(tmp_path, listen, int(upstream.rsplit(":", 1)[1])) as proc:
                await wait_ready(f"http://127.0.0.1:{listen}/sub/health", proc)
                yield Proxied(f"http://127.0.0.1:{listen}", issuer)


async def test_metadata_and_challenge_name_the_proxied_urls(proxied: Proxied) -> None:
    server_url = f"{proxied.url}/sub/mcp"
    async with httpx.AsyncClient(timeout=10) as http:
        refused = await http.post(server_url, json={}, headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        metadata_url = f"{proxied.url}/.well-known/oauth-protected-resource/sub/mcp"
        assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'

        # Where the SDK's OAuth client looks, in its order: the header's URL, then the path-derived one.
        discovery = build_protected_resource_metadata_discovery_urls(metadata_url, server_url)
        assert discovery[:2] == [metadata_url, metadata_url]
        for url in (metadata_url, f"{proxied.url}/sub/.well-known/oauth-protected-resource/mcp"):
            document = await http.get(url)
            assert document.status_code == 200, url
            assert document.json()["resource"] == server_url
            assert check_resource_allowed(server_url, document.json()["resource"])


async def test_mcp_through_the_proxy_accepts_only_the_prefixed_audience(proxied: Proxied) -> None:
    base = f"{proxied.url}/sub"
    alice = proxied.issuer.token(f"{base}/mcp", roles=["writer"])
    async with mcp_client(base, alice) as client:
        result = await client.call_tool("demo.echo", {"text": "via nginx"})
    assert (result.content[0].text, result.is_error) == ('{"echo":"via nginx"}', False)
    async with httpx.AsyncClient(timeout=10) as http:
        unprefixed = proxied.issuer.token(f"{proxied.url}/mcp", roles=["writer"])
        response = await http.get(f"{base}/openai/tools", headers=bearer(unprefixed))
        assert response.status_code == 401
        assert "not issued for this resource" in response.headers["www-authenticate"]
        assert (await http.get(f"{base}/openai/tools", headers=bearer(alice))).status_code == 200
