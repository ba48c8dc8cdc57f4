"""Public and protected tools on one URL (``auth_public_tools``), both challenge forms.

A caller without credentials is the anonymous principal: it is listed and may call the public
tools only, and is asked to sign in for another (401 with ``WWW-Authenticate``, or a tool error
carrying the challenge in ``_meta["mcp/www_authenticate"]``); a caller whose token lacks a tool's
scope gets 403 ``insufficient_scope``. Real SDK clients and httpx against uvicorn on a loopback port.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
import pytest_asyncio
from apcore import Registry

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.signin import CHALLENGE_META_KEY
from apcore_mcp.run.cli import discovered_registry, parse_launch
from apcore_mcp.run.serve import build_settings
from apcore_mcp.settings import SettingError, Settings

from tests._support.auth import api_key_entry, bearer, endpoint_client
from tests._support.doc_blocks import DOCS, REPO, blocks_of
from tests._support.hostile import ACCEPT, modern_headers, tool_call
from tests._support.modules import Echo
from tests._support.sessions import running_http

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE = "alice-key-" + "a" * 30  # no scopes
CAROL = "carol-key-" + "c" * 30  # holds "admin"
ARGS = {"text": "hi"}
METADATA = "https://mcp.example.com/.well-known/oauth-protected-resource/sub/mcp"


class DeclaredPublic(Echo):
    metadata = {"mcp_public": True}


class NeverPublic(Echo):
    metadata = {"mcp_public": False}


def registry() -> Registry:
    made = Registry()
    made.register("public.echo", Echo())
    made.register("public.vetoed", NeverPublic())  # a glob matches, the module says no
    made.register("team.declared", DeclaredPublic())  # no glob matches, the module says yes
    made.register("admin.echo", Echo())
    return made


def settings(**extra: Any) -> Settings:
    base: dict[str, Any] = {
        "auth": "api-key",
        "auth_api_keys": (api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="admin")),
        "auth_tool_scopes": ("admin.*=admin",),
        "auth_public_tools": ("public.*",),
        "public_url": "https://mcp.example.com/sub",
    }
    return Settings(**{**base, **extra})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url() -> AsyncIterator[str]:
    async with running_http(Bridge.build(registry(), settings())) as base:
        yield base


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chatgpt_url() -> AsyncIterator[str]:
    async with running_http(Bridge.build(registry(), settings(auth_challenge="tool-result"))) as base:
        yield base


async def listed(base: str, key: str | None, mode: str) -> dict[str, Any]:
    async with endpoint_client(f"{base}/mcp", key, mode) as made:
        result = await made.list_tools()
    return {tool.name: tool.model_dump(mode="json", by_alias=True) for tool in result.tools}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_anonymous_caller_is_listed_the_public_tools_and_calls_them(url: str, mode: str) -> None:
    tools = await listed(url, None, mode)
    assert sorted(tools) == ["public.echo", "team.declared"]
    async with endpoint_client(f"{url}/mcp", None, mode) as made:
        result = await made.call_tool("public.echo", ARGS)
    assert (result.is_error, result.structured_content) == (False, {"echo": "hi"})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_authenticated_caller_is_listed_every_tool_with_its_security_schemes(url: str, mode: str) -> None:
    tools = await listed(url, ALICE, mode)
    assert sorted(tools) == ["admin.echo", "public.echo", "public.vetoed", "team.declared"]
    schemes = {name: tool["_meta"]["securitySchemes"] for name, tool in tools.items()}
    # API keys are no OAuth scheme: a protected tool says nothing SEP-1488 could describe
    assert schemes == {
        "admin.echo": [],
        "public.echo": [{"type": "noauth"}],
        "public.vetoed": [],
        "team.declared": [{"type": "noauth"}],
    }


async def test_with_jwt_a_protected_tool_says_oauth2_with_its_scopes() -> None:
    from apcore_mcp.calls.signin import SignIn

    made = Settings(
        auth="jwt",
        auth_issuer="https://issuer.example",
        auth_jwks_url="https://issuer.example/jwks",
        auth_scopes=("mcp",),
        auth_tool_scopes=("admin.*=admin",),
        auth_public_tools=("public.*",),
    )
    signin = SignIn.for_settings(made, lambda _name: None)
    assert signin.schemes("admin.echo") == [{"type": "oauth2", "scopes": ["admin", "mcp"]}]
    assert signin.schemes("public.echo") == [{"type": "noauth"}]


def parameters(header: str) -> dict[str, str]:
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    found = {}
    for part in rest.split(", "):
        key, _, value = part.partition("=")
        found[key] = value.strip('"')
    return found


async def wire_call(base: str, name: str, key: str | None, *, modern: bool) -> httpx.Response:
    """One ``tools/call`` POST by hand: 2026-07-28 (stateless, ``Mcp-Name``) or 2025-11-25 in a session."""
    auth = bearer(key) if key else {}
    async with httpx.AsyncClient(timeout=10) as http:
        if modern:
            headers = {**modern_headers("tools/call", name), **auth}
            return await http.post(f"{base}/mcp", json=tool_call(1, name, ARGS, modern=True), headers=headers)
        opened = await http.post(f"{base}/mcp", json=_initialize(), headers={**ACCEPT, **auth})
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        return await http.post(f"{base}/mcp", json=tool_call(2, name, ARGS), headers={**ACCEPT, **session, **auth})


def _initialize() -> dict[str, Any]:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


@pytest.mark.parametrize("modern", [False, True])
async def test_an_anonymous_call_of_a_protected_tool_is_asked_to_sign_in(url: str, modern: bool) -> None:
    response = await wire_call(url, "admin.echo", None, modern=modern)
    assert response.status_code == 401
    found = parameters(response.headers["www-authenticate"])
    assert found["resource_metadata"] == METADATA
    assert found["scope"] == "admin"
    assert "error" not in found  # no token was sent (RFC 6750 section 3.1)


@pytest.mark.parametrize("modern", [False, True])
async def test_a_token_without_the_tools_scope_gets_403_insufficient_scope(url: str, modern: bool) -> None:
    response = await wire_call(url, "admin.echo", ALICE, modern=modern)
    assert response.status_code == 403
    found = parameters(response.headers["www-authenticate"])
    assert (found["error"], found["scope"]) == ("insufficient_scope", "admin")
    allowed = await wire_call(url, "admin.echo", CAROL, modern=modern)
    assert allowed.status_code == 200 and '"isError":false' in allowed.text.replace(" ", "")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_tool_result_form_carries_the_challenge_in_meta(chatgpt_url: str, mode: str) -> None:
    async with endpoint_client(f"{chatgpt_url}/mcp", None, mode) as made:
        anonymous = await made.call_tool("admin.echo", ARGS)
    async with endpoint_client(f"{chatgpt_url}/mcp", ALICE, mode) as made:
        short = await made.call_tool("admin.echo", ARGS)
    assert anonymous.is_error and short.is_error
    signin = parameters(anonymous.meta[CHALLENGE_META_KEY][0])  # type: ignore[index]
    step_up = parameters(short.meta[CHALLENGE_META_KEY][0])  # type: ignore[index]
    assert signin["resource_metadata"] == step_up["resource_metadata"] == METADATA
    assert "error" not in signin and step_up["error"] == "insufficient_scope"
    assert signin["scope"] == step_up["scope"] == "admin"


async def test_a_module_that_says_never_public_is_protected_whatever_the_glob(url: str) -> None:
    response = await wire_call(url, "public.vetoed", None, modern=True)
    assert response.status_code == 401
    declared = await wire_call(url, "team.declared", None, modern=True)
    assert declared.status_code == 200


async def test_other_routes_still_need_a_token(url: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{url}/metrics")).status_code == 401


async def test_public_tools_need_auth_and_a_known_challenge_form() -> None:
    with pytest.raises(SettingError, match="auth_public_tools is set but auth is 'none'"):
        Settings(auth_public_tools=("public.*",))
    with pytest.raises(SettingError, match="auth_challenge"):
        settings(auth_challenge="popup")


async def test_a_module_whose_mcp_public_is_not_a_boolean_is_a_discovery_problem() -> None:
    class Typo(Echo):
        metadata = {"mcp_public": "yes"}

    made = Registry()
    made.register("typo.echo", Typo())
    bridge = Bridge.build(made, settings())
    problems = bridge.full_catalog.problems()
    assert [problem.module_id for problem in problems] == ["typo.echo"]
    assert "mcp_public must be true or false" in str(problems[0])


async def test_the_docs_example_answers_as_shown() -> None:
    """docs/public-tools.md: its command served as written, its client run against it, printing what it says."""
    command, client_code = [block for block in blocks_of(DOCS / "public-tools.md") if block.marker("run by")]
    argv = shlex.split(command.body.strip())
    assert argv[0] == "apcore-mcp"
    launch = parse_launch(argv[1:], {}, raising=True)
    assert launch.launch["transport"] == "streamable-http"
    made = build_settings(launch.values)  # type: ignore[arg-type]
    bridge = Bridge.build(discovered_registry(REPO / str(launch.extensions_dir)), made)
    async with running_http(bridge) as base:
        code = client_code.body.replace('URL = "http://127.0.0.1:8000/mcp"', f'URL = "{base}/mcp"')
        done = await anyio.run_process([sys.executable, "-c", code], cwd=REPO, check=False)
    said = [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# ")]
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == said
