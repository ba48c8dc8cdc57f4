"""``GET /admin/tools`` lists, for an operator, each module not served to someone and why, and
``/ready`` counts them. uvicorn on a loopback port; API keys as tokens; a real upstream process
that fails to start. The examples of docs/hidden-tools.md run here, as written."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from apcore import Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.run.cli import discovered_registry, parse_launch
from apcore_mcp.run.serve import build_settings

from tests._support.auth import api_key_entry, bearer
from tests._support.doc_blocks import DOCS, REPO, blocks_of
from tests._support.hostile import serving
from tests._support.modules import Echo
from tests._support.sessions import running_http

OPERATOR = "operator-key-" + "o" * 30


def registry() -> Registry:
    made = Registry()
    made.register("demo.echo", Echo())
    made.register("admin.purge", Echo())
    return made


def failing_config(tmp_path: Path) -> str:
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    config.write_text(json.dumps({"mcpServers": {"db": server}}))
    return str(config)


async def test_operator_sees_why_and_ready_counts(tmp_path: Path) -> None:
    settings: dict[str, Any] = {
        "auth": "api-key",
        "auth_api_keys": (api_key_entry(OPERATOR, "op", scopes="mcp:admin"),),
        "auth_tool_scopes": ("admin.*=admin",),
        "mcp_config": failing_config(tmp_path),
    }
    async with serving(registry(), **settings) as (url, _), httpx.AsyncClient() as http:
        listed = await http.get(f"{url}/admin/tools", headers=bearer(OPERATOR))
        ready = (await http.get(f"{url}/ready")).json()
    assert listed.status_code == 200, listed.text
    assert listed.headers["cache-control"] == "no-store"
    hidden = listed.json()["hidden"]
    assert {"module": "admin.purge", "reasons": [{"kind": "scope", "scopes": ["admin"]}]} in hidden
    (failed,) = [entry for entry in hidden if entry.get("upstream") == "db"]
    assert failed["reasons"][0]["kind"] == "upstream" and "3" in failed["reasons"][0]["error"]
    assert ready["hidden_tools"] == len(hidden) == 2


async def test_auth_off_serves_loopback_when_enabled() -> None:
    async with serving(registry(), admin_routes=True) as (url, _), httpx.AsyncClient() as http:
        listed = await http.get(f"{url}/admin/tools")
    assert listed.status_code == 200 and listed.json() == {"hidden": []}


async def test_the_docs_examples_answer_as_shown() -> None:
    command, listed, dry_run = [block for block in blocks_of(DOCS / "hidden-tools.md") if block.marker("run by")]
    serve_line, curl_line = command.body.strip().splitlines()
    argv = shlex.split(serve_line)
    assert argv[0] == "apcore-mcp"
    launch = parse_launch(argv[1:], {}, raising=True)
    bridge = Bridge.build(discovered_registry(REPO / launch.extensions_dir), build_settings(launch.values))  # type: ignore[arg-type]
    async with running_http(bridge) as url, httpx.AsyncClient() as http:
        (documented_url,) = [word for word in shlex.split(curl_line) if word.startswith("http://")]
        answer = (await http.get(documented_url.replace("http://127.0.0.1:8000", url))).json()
        code = dry_run.body.replace("http://127.0.0.1:8000", url)
        done = await anyio.run_process([sys.executable, "-c", code], cwd=REPO, check=False)
    for entry in json.loads(listed.body)["hidden"]:
        assert entry in answer["hidden"]
    said = [line.strip().removeprefix("# ") for line in code.splitlines() if line.strip().startswith("# ")]
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == said == ["False ['schema']"]
