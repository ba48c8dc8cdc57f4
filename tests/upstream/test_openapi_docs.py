"""The runnable blocks of docs/openapi.md, run as written against the test API (tests/upstreams/openapi_service.py):
the command line with only its ports changed to free ones on 127.0.0.1, the mcp.json with only its URL's port."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client

from apcore_mcp.testing import free_port
from apcore_mcp.upstream.openapi.operations import hints

from tests._support.openapi import SECRET, client, service_in_loop, service_process, shop_bridge
from tests._support.processes import stop_process, wait_ok
from tests._support.results import text_of

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "openapi.md"
MARK = "<!-- run by: tests/upstream/test_openapi_docs.py -->"
DOCUMENTED = "http://127.0.0.1:8080"


def block(lang: str) -> str:
    """The one ``lang`` block of the page marked as run here."""
    found = re.findall(rf"{re.escape(MARK)}\n```{lang}\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(found) == 1, f"expected one marked {lang} block in {PAGE.name}, found {len(found)}"
    return str(found[0])


def test_the_command_line_mounts_the_api(tmp_path: Path) -> None:
    argv = shlex.split(block("bash").strip())
    assert argv[0] == "apcore-mcp" and argv[argv.index("--extensions-dir") + 1] == "./extensions"
    (tmp_path / "extensions").symlink_to(REPO / "examples" / "extensions")
    port = free_port()
    with service_process() as base:
        argv = [str(Path(sys.executable).parent / argv[0]), *(arg.replace(DOCUMENTED, base) for arg in argv[1:])]
        log = tmp_path / "server.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [*argv, "--host", "127.0.0.1", "--port", str(port)], cwd=tmp_path, stdout=sink, stderr=sink
            )
        try:
            wait_ok(f"http://127.0.0.1:{port}/health", proc, details=lambda: log.read_text(errors="replace"))

            async def call() -> tuple[set[str], str]:
                async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as mcp:
                    names = {tool.name for tool in (await mcp.list_tools()).tools}
                    return names, text_of(await mcp.call_tool("shop.get_item", {"itemId": "3"}))

            names, text = anyio.run(call)
        finally:
            stop_process(proc)
    assert {"text.stats", "shop.get_item", "shop.create_item"} <= names
    assert json.loads(text) == {"id": "3", "raw_path": "/api/items/3"}


async def test_the_mcp_json_entry_serves_its_operations_in_its_toolset(tmp_path: Path) -> None:
    async with service_in_loop() as (base, app):
        document = json.loads(block("json").replace(DOCUMENTED, base))
        async with shop_bridge(
            tmp_path, document["mcpServers"], toolsets=document["toolsets"], toolset="shopping"
        ) as bridge:
            async with client(bridge) as mcp:
                names = {tool.name: tool for tool in (await mcp.list_tools()).tools}
                items = await mcp.call_tool("shop.list_items", {"limit": 1})
    assert set(names) == {"shop.list_items", "shop.get_item", "shop.create_item", "shop.delete_item"}
    assert names["shop.delete_item"].annotations == hints("delete")
    assert items.structured_content == {"result": [{"id": "0", "tags": []}]}
    assert app.state.seen[-1]["authorization"] == f"Bearer {SECRET}"  # ${SHOP_TOKEN}, expanded
