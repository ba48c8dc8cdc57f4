"""Deployment files: Dockerfile, docker-compose.yml, deploy/ (nginx, Prometheus, Kubernetes).

- Static checks of every file (parsed, not grepped where a parser exists).
- The Dockerfile's own CMD and ENV, run from the repository root as the image would run them
  from ``/app``: it serves the example registry and stops promptly on SIGTERM.
- ``deploy/nginx.conf`` run for real in front of a live server (marker ``nginx``; needs the
  ``nginx`` binary: ``apt-get install nginx``): Host is forwarded, MCP works over Streamable
  HTTP and SSE, and ``list_changed`` notifications come through without buffering delay.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.app import create_app
from apcore_mcp.run.cli import Launch, parse_launch
from apcore_mcp.run.protocol import TimedHttpToolsProtocol
from apcore_mcp.run.protocol.timed import http_protocol
from apcore_mcp.run.serve import build_settings
from apcore_mcp.run.serving import STREAM_CLOSE_SECONDS, make_http_server
from apcore_mcp.run.workers import DRAIN_MARGIN_SECONDS, worker_config
from apcore_mcp.settings import Settings
from apcore_mcp.settings.replicas import usable_cpus
from apcore_mcp.testing import RunningServer, free_port

from tests._support.deploy import (
    DOCKERFILE,
    clean_env,
    dockerfile_stages,
    final_stage,
    healthcheck_cmd,
    image_cmd,
    image_command,
    image_env,
    log_tail,
    nginx_running,
    point_nginx_conf,
    running,
    wait_exit,
)
from tests._support.modules import make_executor
from tests._support.processes import wait_ok
from tests._support.sessions import Inbox, open_session
from tests._support.workers import children_of

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DEPLOY = REPO / "deploy"
NGINX_CONF = DEPLOY / "nginx.conf"
KUBERNETES = DEPLOY / "kubernetes"
EXAMPLE_TOOLS = ["files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"]
STARTUP_SECONDS = 20
STOP_SECONDS = 8
NOTIFY_SECONDS = 2.0


# --------------------------------------------------------------------------- Dockerfile checks


def test_dockerfile_base_is_python_slim_and_installs_with_constraints() -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    for stage in stages:
        assert stage.base.startswith("python:3.11-slim"), stage.base
    installs = [args for stage in stages for args in stage.all("RUN") if "pip install" in args]
    assert installs, "no pip install"
    assert any("speed" in args for args in installs), "the CMD's httptools protocol needs the speed extra"
    for args in installs:
        assert "--no-cache-dir" in args, args
        assert "-c constraints.txt" in args, args
    (builder,) = [stage for stage in stages if any("pip install" in args for args in stage.all("RUN"))]
    copied = {source.rstrip("/") for args in builder.all("COPY") for source in args.split()[:-1]}
    # what the wheel build reads: the readme named in pyproject.toml, force-included files
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {"constraints.txt", "pyproject.toml", project["project"]["readme"]}
    needed |= {path.split("/")[0] for path in [*wheel.get("packages", []), *wheel.get("force-include", {})]}
    assert needed <= copied, f"not copied into the build stage: {needed - copied}"


def test_dockerfile_final_stage_runs_the_app_as_non_root() -> None:
    stage = final_stage()
    user = stage.last("USER").split(":")[0]
    assert user not in ("root", "0"), user
    assert stage.last("WORKDIR") == "/app"
    assert "8000" in stage.last("EXPOSE").split()
    copied = [args.split() for args in stage.all("COPY") if not args.startswith("--from")]
    sources = {parts[0].rstrip("/") for parts in copied}
    assert {"app", "examples", "static"} <= sources, sources
    for source in ("app", "examples", "static"):
        assert (REPO / source).is_dir(), f"{source}/ is copied but does not exist"
    env = stage.env()
    assert env["APCORE_MCP_HOST"] == "0.0.0.0"
    assert env["APCORE_MCP_EXTENSIONS_DIR"] == "/app/examples/extensions"


def image_settings(**env: str) -> tuple[Launch, Settings]:
    """What the image's CMD starts with: its flags over its ENV (and ``env``), as the CLI reads them."""
    launch = parse_launch(image_cmd()[1:], {**image_env(), **env}, raising=True)
    return launch, build_settings(launch.values)  # type: ignore[arg-type]  # checked by Settings


def test_dockerfile_cmd_is_the_cli_with_every_setting_from_the_environment() -> None:
    cmd = image_cmd()
    assert cmd[0] == "apcore-mcp", cmd
    # the address and the transport only: everything else (workers included) is APCORE_MCP_*
    assert [arg for arg in cmd[1:] if arg.startswith("-")] == ["--transport", "--host", "--port"], cmd
    launch, settings = image_settings()
    assert launch.launch["transport"] == "streamable-http"
    assert (settings.host, settings.port) == ("0.0.0.0", 8000)
    assert launch.extensions_dir == REPO / "examples" / "extensions"
    assert settings.workers == 1 and image_settings(APCORE_MCP_WORKERS="auto")[1].workers == usable_cpus()
    assert settings.event_loop == "asyncio"
    # request headers timed, on httptools (the image installs the speed extra: `auto` picks it)
    assert http_protocol(settings.http_parser) is TimedHttpToolsProtocol
    # docker stop kills after 10 s: calls drain, then streams close (several workers: uvicorn's bound)
    assert settings.shutdown_timeout + max(STREAM_CLOSE_SECONDS, DRAIN_MARGIN_SECONDS) <= STOP_SECONDS
    bridge = Bridge.build(make_executor(), settings)
    for config in (make_http_server(create_app(bridge=bridge), bridge).config, worker_config(settings)):
        # the app names the client, from APCORE_MCP_FORWARDED_ALLOW_IPS only; no access log
        assert (config.proxy_headers, config.access_log, config.loop) == (False, False, "asyncio")
        assert config.http is TimedHttpToolsProtocol
    # forwarded headers trusted from the proxy only: never "*"
    names = ("APCORE_MCP_FORWARDED_ALLOW_IPS", "FORWARDED_ALLOW_IPS", "UVICORN_FORWARDED_ALLOW_IPS")
    trusted = [value for name, value in final_stage().env().items() if name in names]
    for value in [*trusted, *settings.forwarded_allow_ips]:
        assert "*" not in value, f"forwarded headers trusted from anyone: {value}"


def test_dockerfile_healthcheck_uses_python_urllib_on_health() -> None:
    cmd = healthcheck_cmd()
    assert cmd[0] in ("python", "python3"), cmd
    script = " ".join(cmd)
    assert "urllib" in script
    assert "/health" in script
    assert "curl" not in script and "wget" not in script


def test_dockerignore_keeps_the_build_context_small() -> None:
    ignored = {line.strip().rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines()}
    for entry in (".venv", ".git", ".cache", "tests"):
        assert entry in ignored, entry
    for needed in ("src", "app", "examples", "static", "README.md", "pyproject.toml", "constraints.txt"):
        assert needed not in ignored, needed


# --------------------------------------------------------------------------- compose, Prometheus, nginx, k8s


def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def test_compose_services_publish_on_loopback_only() -> None:
    services = compose()["services"]
    default = {name for name, service in services.items() if not service.get("profiles")}
    assert default == {"apcore-mcp", "nginx", "prometheus"}  # others are opt-in profiles
    assert "ports" not in services["apcore-mcp"], "the service is reached through nginx only"
    published = 0
    for name, service in services.items():
        for port in service.get("ports", []):
            published += name in default
            if isinstance(port, dict):
                assert port.get("host_ip") == "127.0.0.1", (name, port)
            else:
                assert str(port).startswith("127.0.0.1:"), (name, port)
    assert published == 2
    assert "127.0.0.1:8080:80" in services["nginx"]["ports"]
    assert "127.0.0.1:9090:9090" in services["prometheus"]["ports"]


def test_compose_wires_nginx_prometheus_and_trusted_proxy() -> None:
    doc = compose()
    services = doc["services"]
    app = services["apcore-mcp"]
    assert app["build"] == "."
    env = app["environment"]
    assert env["APCORE_MCP_HOST"] == "0.0.0.0"
    allowed = [host.strip() for host in env["APCORE_MCP_ALLOWED_HOSTS"].split(",")]
    assert "apcore-mcp" in allowed, "Prometheus scrapes with Host apcore-mcp:8000"
    nginx_networks = services["nginx"]["networks"]
    nginx_ips = {net["ipv4_address"] for net in nginx_networks.values() if net and "ipv4_address" in net}
    assert env["APCORE_MCP_FORWARDED_ALLOW_IPS"] in nginx_ips, "trust forwarded headers from nginx only"
    assert services["nginx"]["image"].startswith("nginx:1.27-alpine")
    assert services["prometheus"]["image"].startswith("prom/prometheus")
    mounts = {
        name: [volume.split(":")[0] for volume in service.get("volumes", [])] for name, service in services.items()
    }
    assert "./deploy/nginx.conf" in mounts["nginx"]
    assert "./deploy/prometheus.yml" in mounts["prometheus"]


def test_prometheus_scrapes_the_service_every_15s() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "apcore-mcp"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job.get("scrape_interval", config["global"]["scrape_interval"]) == "15s"
    targets = [target for group in job["static_configs"] for target in group["targets"]]
    assert targets == ["apcore-mcp:8000"]


def nginx_locations(conf: str) -> dict[str, list[str]]:
    """``location`` arguments -> the directives inside that block (one level, comments dropped)."""
    locations: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in conf.splitlines():
        line = raw.split("#")[0].strip()
        if line.startswith("location ") and line.endswith("{"):
            current = locations.setdefault(line[len("location ") : -1].strip(), [])
        elif line == "}":
            current = None
        elif current is not None and line:
            current.append(line)
    return locations


def nginx_location_for(locations: dict[str, list[str]], path: str) -> str:
    """Which location nginx picks for ``path``: exact, else first matching regex, else longest prefix."""
    if f"= {path}" in locations:
        return f"= {path}"
    for key in locations:
        if key.startswith("~ ") and re.search(key[2:], path):
            return key
    prefixes = [key for key in locations if not key.startswith(("~", "=")) and path.startswith(key)]
    assert prefixes, f"no location for {path}"
    return max(prefixes, key=len)


def test_nginx_conf_is_substitutable_and_unbuffered_for_mcp() -> None:
    conf = NGINX_CONF.read_text()
    assert conf.count("apcore-mcp:8000") == 1
    assert conf.count("listen 80;") == 1
    directives = [line.split("#")[0].strip() for line in conf.splitlines()]
    # left to the command line (`-g`), else the tests' and the image's `-g` would clash
    assert not [d for d in directives if d.startswith(("pid ", "daemon ", "user "))]
    for line in directives:
        if "_temp_path" in line:
            assert not line.split()[1].startswith("/"), f"temp path must be relative to the prefix: {line}"
    locations = nginx_locations(conf)
    proxied = (
        "proxy_pass http://apcore_mcp;",
        "proxy_http_version 1.1;",
        'proxy_set_header Connection "";',
        "proxy_set_header Host $http_host;",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "proxy_set_header X-Forwarded-Proto $scheme;",
    )
    streaming = ("proxy_buffering off;", "proxy_cache off;", "gzip off;", "proxy_read_timeout 3600s;")
    for path in ("/mcp", "/sse", "/messages/"):
        block = locations[nginx_location_for(locations, path)]
        for needed in proxied + streaming:
            assert needed in block, f"{path}: {needed}"
    for path in ("/health", "/ready", "/openai/tools", "/explorer/"):
        block = locations[nginx_location_for(locations, path)]
        for needed in proxied:
            assert needed in block, f"{path}: {needed}"
    assert nginx_location_for(locations, "/metrics") == "= /metrics"


def test_kubernetes_manifests() -> None:
    deployment = yaml.safe_load((KUBERNETES / "deployment.yaml").read_text())
    service = yaml.safe_load((KUBERNETES / "service.yaml").read_text())
    assert (KUBERNETES / "README.md").is_file()
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["APCORE_MCP_STATELESS"] == "true"
    assert "*" not in env.get("APCORE_MCP_FORWARDED_ALLOW_IPS", "")
    for probe, path in (("livenessProbe", "/health"), ("readinessProbe", "/ready")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        # the kubelet sends the pod IP as Host, which the service would answer with 421
        hosts = {header["value"] for header in get.get("httpHeaders", []) if header["name"].lower() == "host"}
        assert hosts == {"localhost"}, probe
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == final_stage().last("USER").split(":")[0]
    assert container["resources"]["limits"] and container["resources"]["requests"]
    labels = spec["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["port"] == 8000


# --------------------------------------------------------------------------- processes


async def test_image_command_serves_examples_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    with running(image_command(port), log, env=image_env()) as proc:
        health = wait_ok(f"{url}/health", proc, STARTUP_SECONDS, lambda: log_tail(log)).json()
        assert health["status"] == "ok"
        assert health["module_count"] == len(EXAMPLE_TOOLS)

        # the image's HEALTHCHECK, pointed at this port
        check = [arg.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for arg in healthcheck_cmd()]
        assert check != healthcheck_cmd(), "HEALTHCHECK does not target 127.0.0.1:8000"
        check[0] = sys.executable
        assert subprocess.run(check, timeout=10, capture_output=True).returncode == 0

        async with Client(f"{url}/mcp", mode="legacy") as client:
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert names == EXAMPLE_TOOLS

        # SIGTERM while a client holds its session (GET /mcp stream) and a legacy SSE stream is
        # open: long-lived streams must not hold the stop up (docker stop kills after 10 s).
        stack = contextlib.AsyncExitStack()
        try:
            client = await stack.enter_async_context(Client(f"{url}/mcp", mode="legacy"))
            await client.list_tools()
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=5))
            sse = await stack.enter_async_context(http.stream("GET", f"{url}/sse"))
            assert sse.status_code == 200
            proc.send_signal(signal.SIGTERM)
            stopped_after = await wait_exit(proc, STOP_SECONDS)
        finally:
            with contextlib.suppress(Exception):
                await stack.aclose()
        assert stopped_after is not None, f"still running {STOP_SECONDS}s after SIGTERM:\n{log_tail(log)}"
        assert proc.returncode in (0, -signal.SIGTERM), log_tail(log)
        assert "Application shutdown complete" in log.read_text(), log_tail(log)


async def test_image_command_serves_on_two_workers_from_the_environment(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    command, env = image_command(port), {**image_env(), "APCORE_MCP_WORKERS": "2"}
    with running(command, log, env=env) as proc:
        health = wait_ok(f"{url}/health", proc, STARTUP_SECONDS, lambda: log_tail(log)).json()
        assert (health["status"], health["module_count"]) == ("ok", len(EXAMPLE_TOOLS))
        server = RunningServer("streamable-http", command, env, str(REPO), tmp_path, process=proc)
        workers = children_of(server)
        assert len(workers) == 2, f"worker processes: {workers}\n{log_tail(log)}"
        for _ in range(len(workers) + 1):  # a connection each: the kernel hands it to either worker
            async with Client(f"{url}/mcp") as client:
                result = await client.call_tool("text.stats", {"text": "two words"})
            assert tool_result(result)[0]["words"] == 2, result
        proc.send_signal(signal.SIGTERM)
        stopped_after = await wait_exit(proc, STOP_SECONDS)
        assert stopped_after is not None, f"still running {STOP_SECONDS}s after SIGTERM:\n{log_tail(log)}"
        assert proc.returncode == 0, log_tail(log)
    text = log.read_text()
    assert "with 2 workers" in text and text.count("Application shutdown complete") == 2, text
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a worker outlived its supervisor"


# --------------------------------------------------------------------------- real nginx


@dataclass
class Proxied:
    url: str  # nginx
    upstream: str  # the server behind it


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    """The live server (``tests/servers/live_changes.py``) behind deploy/nginx.conf, both on free 127.0.0.1 ports."""
    tmp = tmp_path_factory.mktemp("nginx")
    upstream_port, nginx_port = free_port(), free_port()
    conf = point_nginx_conf(NGINX_CONF.read_text(), nginx_port, {"apcore-mcp:8000": f"127.0.0.1:{upstream_port}"})
    upstream = f"http://127.0.0.1:{upstream_port}"
    url = f"http://127.0.0.1:{nginx_port}"
    server_log = tmp / "server.log"
    command = [sys.executable, "-m", "tests.servers.live_changes", str(upstream_port)]
    with running(command, server_log, env=clean_env()) as server:
        wait_ok(f"{upstream}/health", server, STARTUP_SECONDS, lambda: log_tail(server_log))
        with nginx_running(conf, tmp, nginx_port):
            yield Proxied(url, upstream)


def tool_result(result: Any) -> tuple[dict[str, Any], bool]:
    return json.loads(result.content[0].text), bool(result.is_error)


@pytest.mark.nginx
def test_nginx_forwards_host_to_the_allow_list(proxied: Proxied) -> None:
    # nginx passes the client's Host: the service's allow-list decides (421 otherwise)
    allowed = httpx.get(f"{proxied.url}/health", headers={"Host": "mcp.example.test"}, timeout=5)
    assert allowed.status_code == 200
    assert allowed.json()["status"] == "ok"
    rejected = httpx.get(f"{proxied.url}/health", headers={"Host": "evil.example"}, timeout=5)
    assert rejected.status_code == 421
    rejected_mcp = httpx.post(
        f"{proxied.url}/mcp",
        headers={"Host": "evil.example", "Content-Type": "application/json"},
        content=b"{}",
        timeout=5,
    )
    assert rejected_mcp.status_code == 421
    # metrics stay internal: Prometheus scrapes the service directly
    assert httpx.get(f"{proxied.url}/metrics", timeout=5).status_code == 404
    assert httpx.get(f"{proxied.upstream}/metrics", timeout=5).status_code == 200


@pytest.mark.nginx
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_live_list_changed_through_nginx(proxied: Proxied, transport: str) -> None:
    """A module added, then removed, during the session: each change reaches the client through nginx."""
    inbox = Inbox()
    async with open_session(transport, proxied.url, inbox) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"util.echo", "util.register"} <= names and "demo.added" not in names
        assert tool_result(await client.call_tool("util.echo", {"text": "hi"})) == ({"echo": "hi"}, False)
        for change, listed in (("add", True), ("remove", False)):
            inbox.clear()
            assert tool_result(await client.call_tool("util.register", {"text": change})) == ({"echo": change}, False)
            returned = time.monotonic()
            arrived = await inbox.wait_for("notifications/tools/list_changed")
            assert arrived - returned < NOTIFY_SECONDS, f"list_changed {arrived - returned:.2f}s after the call"
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert ("demo.added" in names) is listed, names
            if listed:
                assert tool_result(await client.call_tool("demo.added", {"text": "new"})) == ({"echo": "new"}, False)
        assert (await client.call_tool("demo.added", {"text": "new"})).is_error is True  # removed: refused


def test_the_version_is_written_once() -> None:
    """pyproject reads it from ``_version.py`` (no second copy to forget); the installed metadata agrees."""
    import importlib.metadata

    import apcore_mcp

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/apcore_mcp/_version.py"
    assert importlib.metadata.version("apcore-mcp") == apcore_mcp.__version__
