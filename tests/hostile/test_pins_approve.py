"""Approving a held upstream tool over HTTP: only an operator holding ``auth_pins_scope``, never open.

A real stdio upstream is pinned, then changes a tool. ``POST /admin/pins/approve`` is refused to
a token without the scope (the tool stays held, the file untouched) and to a bad body; a token with
it approves the tool: the pins file holds the new hash, the tool is served at once, and the
approval is one INFO record on ``apcore_mcp.audit``. With auth off the route does not exist.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from apcore import Executor, Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer
from tests._support.hostile import wait_until
from tests._support.modules import Echo
from tests._support.pins import PINNED, PULLED, drifted
from tests._support.sessions import running_http

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE = "alice-key-" + "a" * 30  # holds "up": she may call the tools, not approve them
OPS = "ops-key-" + "o" * 32  # holds "up" and the pins scope
APPROVE = "/admin/pins/approve"


class Served:
    def __init__(self, base: str, bridge: Bridge, pins: Path) -> None:
        self.base, self.bridge, self.pins = base, bridge, pins


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    tmp = tmp_path_factory.mktemp("pins-approve")
    settings = Settings(
        mcp_config=str(tmp / "mcp.json"),
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice", scopes="up"), api_key_entry(OPS, "ops", scopes="up mcp:pins")),
        auth_tool_scopes=("up.*=up",),
    )
    await drifted(tmp, settings)
    registry = Registry()
    registry.register("demo.echo", Echo())
    bridge = Bridge.build(Executor(registry), settings)
    async with running_http(bridge) as base:
        await wait_until(lambda: bridge.catalog.get("up.steady") is not None, "the upstream's tools mounted")
        yield Served(base, bridge, tmp / "mcp.pins.json")


async def post(base: str, key: str, body: object) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(f"{base}{APPROVE}", json=body, headers=bearer(key))


@pytest.mark.parametrize(
    ("body", "status"),
    [({"tools": []}, 400), ({"tools": "up.look"}, 400), ([1], 400), ({"tools": ["up.nothing"]}, 400)],
)
async def test_a_bad_request_approves_nothing(served: Served, body: object, status: int) -> None:
    before = served.pins.read_bytes()
    response = await post(served.base, OPS, body)
    assert response.status_code == status and response.json()["error_description"]
    assert served.pins.read_bytes() == before and served.bridge.catalog.get("up.look") is None


async def test_a_token_without_the_scope_approves_nothing(served: Served) -> None:
    before = served.pins.read_bytes()
    response = await post(served.base, ALICE, {"tools": ["up.look"]})
    assert response.status_code == 403 and response.json()["error_description"] == "needs scope mcp:pins"
    assert served.pins.read_bytes() == before and served.bridge.catalog.get("up.look") is None


async def test_only_the_operator_reads_the_held_tools_diff(served: Served) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await http.get(f"{served.base}/admin/pins", headers=bearer(ALICE))
        shown = await http.get(f"{served.base}/admin/pins", headers=bearer(OPS))
    assert refused.status_code == 403 and "look" not in refused.text
    [held] = shown.json()["held"]
    assert (held["tool"], held["state"]) == ("up.look", "changed")
    assert f"-  {PINNED['look']}" in held["diff"] and f"+  {PULLED['look']}" in held["diff"]


async def test_the_operator_approves_and_the_tool_is_served_audited(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    pinned = json.loads(served.pins.read_text())["servers"]["up"]["look"]["sha256"]
    with caplog.at_level(logging.INFO, logger="apcore_mcp.audit"):
        response = await post(served.base, OPS, {"tools": ["up.look"]})
    assert response.status_code == 200 and response.json() == {"approved": ["up.look"]}
    now = json.loads(served.pins.read_text())["servers"]["up"]["look"]["sha256"]
    assert now != pinned and served.bridge.catalog.get("up.look") is not None
    records = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apcore_mcp.audit"]
    assert [(r["event"], r["tool"], r["sha256"], r["decided_by"]) for r in records] == [
        ("pins.approve", "up.look", now, "ops")
    ]


async def test_with_auth_off_the_route_does_not_exist() -> None:
    registry = Registry()
    registry.register("demo.echo", Echo())
    async with running_http(Bridge.build(registry, Settings(admin_routes=True))) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(f"{base}{APPROVE}", json={"tools": ["up.look"]})
    assert response.status_code == 404


async def test_several_workers_approve_under_the_files_lock(tmp_path: Path) -> None:
    """Workers never pin on first sight, but an operator's approval is one locked write they all follow."""
    keys = (api_key_entry(OPS, "ops", scopes="mcp:pins"),)
    settings = Settings(mcp_config=str(tmp_path / "mcp.json"), auth="api-key", auth_api_keys=keys, workers=2)
    drift = await drifted(tmp_path, settings.replace(workers=1))  # one process pinned it once
    before = drift.pins.read_bytes()
    bridge = Bridge.build(Executor(Registry()), settings)
    async with running_http(bridge) as base:
        await wait_until(lambda: bridge.catalog.get("up.steady") is not None, "the upstream's tools mounted")
        response = await post(base, OPS, {"tools": ["up.look"]})
    assert response.status_code == 200 and response.json() == {"approved": ["up.look"]}
    after = json.loads(drift.pins.read_text())
    assert after != json.loads(before) and "look" in json.dumps(after)
