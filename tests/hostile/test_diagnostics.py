"""The operator's diagnostics tell no one else what the hidden-tool rule keeps from them.

``/admin/tools`` names hidden tools and why; ``/ready`` is open and counts them only; a dry run
of a hidden tool answers as for an absent one. Each attempt below is made by a caller who is
not the operator (no token, a token without ``auth_admin_scope``, a client off the loopback with
auth off, or with ``admin_routes`` off) against uvicorn on a loopback port, and no answer may
hold a hidden tool's name. Real clients: httpx, and the SDK's client in both eras.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import pytest
import pytest_asyncio
from apcore import Registry
from mcp.types import RequestParamsMeta

from apcore_mcp.calls.dry_run import DRY_RUN_META

from tests._support.auth import api_key_entry, bearer, mcp_client
from tests._support.hostile import serving
from tests._support.modules import Echo

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER = "user-key-" + "u" * 30  # no scopes: admin.* is hidden from this caller
OPERATOR = "operator-key-" + "o" * 30
HIDDEN = ["admin.purge", "admin.salaries"]
DRY = cast(RequestParamsMeta, {DRY_RUN_META: True})


def registry() -> Registry:
    made = Registry()
    for module_id in ["demo.echo", *HIDDEN]:
        made.register(module_id, Echo())
    return made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url() -> AsyncIterator[str]:
    keys = (api_key_entry(USER, "user"), api_key_entry(OPERATOR, "op", scopes="mcp:admin"))
    settings: dict[str, Any] = {
        "auth": "api-key",
        "auth_api_keys": keys,
        "auth_tool_scopes": ("admin.*=admin",),
        "auth_filter_tools": True,
    }
    async with serving(registry(), **settings) as (base, _):
        yield base


def assert_nameless(text: str) -> None:
    leaked = [name for name in HIDDEN if name in text]
    assert not leaked, f"hidden tool names leaked: {leaked} in {text[:300]!r}"


async def test_admin_tools_refuses_all_but_the_operator(url: str) -> None:
    async with httpx.AsyncClient() as http:
        anonymous = await http.get(f"{url}/admin/tools")
        user = await http.get(f"{url}/admin/tools", headers=bearer(USER))
        operator = await http.get(f"{url}/admin/tools", headers=bearer(OPERATOR))
    assert anonymous.status_code == 401 and user.status_code == 403
    for refused in (anonymous, user):
        assert_nameless(refused.text + str(refused.headers))
    assert operator.status_code == 200
    assert {entry["module"] for entry in operator.json()["hidden"]} == set(HIDDEN)  # the names are there


async def test_ready_counts_without_names(url: str) -> None:
    async with httpx.AsyncClient() as http:
        ready = await http.get(f"{url}/ready")
    assert ready.json()["hidden_tools"] == len(HIDDEN)
    assert_nameless(ready.text + str(ready.headers))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_dry_run_of_a_hidden_tool_is_not_found(url: str, mode: str) -> None:
    async with mcp_client(url, USER, mode=mode) as client:
        hidden = await client.call_tool("admin.purge", {"text": "x"}, meta=DRY)
        absent = await client.call_tool("admin.gone", {"text": "x"}, meta=DRY)
    assert hidden.is_error and absent.is_error
    answer = hidden.model_dump_json().replace("admin.purge", "<tool>")
    assert answer == absent.model_dump_json().replace("admin.gone", "<tool>")


async def test_auth_off_needs_the_switch_and_the_loopback() -> None:
    async with serving(registry()) as (url, _), httpx.AsyncClient() as http:
        off = await http.get(f"{url}/admin/tools")
    assert off.status_code == 404
    forwarded = {"admin_routes": True, "forwarded_allow_ips": ("127.0.0.1",)}
    async with serving(registry(), **forwarded) as (url, _), httpx.AsyncClient() as http:
        remote = await http.get(f"{url}/admin/tools", headers={"X-Forwarded-For": "203.0.113.7"})
        local = await http.get(f"{url}/admin/tools")
    assert remote.status_code == 404
    assert_nameless(remote.text + str(remote.headers))
    assert local.status_code == 200
