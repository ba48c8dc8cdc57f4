"""Per-caller upstream credentials by token exchange (RFC 8693), over real HTTP end to end.

Our server authenticates callers with JWTs; an ``mcp.json`` entry with ``auth`` has each
caller's calls carried by a token the authorization server (a Starlette app on a loopback
port, tests/_support/token_server.py) exchanged for theirs, with the upstream's audience. The
upstream (Streamable HTTP, loopback, tests/upstreams/audience_server.py) refuses any other
token and answers with the subject it was given. The example of docs/upstream-credentials.md
is run here as written, with only its URLs pointed at those servers.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from apcore_mcp.upstream.config.parse import UpstreamConfigError, parse_config
from apcore_mcp.upstream.specs import ACCESS_TOKEN_TYPE

from tests._support.auth import mcp_client
from tests._support.exchange import LISTER_TOKEN, SERVER, scene
from tests._support.results import text_of
from tests._support.token_server import CLIENT_ID, CLIENT_SECRET, GRANT, SLOW_SECONDS

WHOAMI = f"{SERVER}.whoami"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "upstream-credentials.md"
MARK = "<!-- run by: tests/upstream/test_upstream_credentials.py -->"


async def test_each_caller_reaches_the_upstream_as_themselves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        alice_token, bob_token = s.token("alice"), s.token("bob")
        async with mcp_client(s.url, alice_token) as alice, mcp_client(s.url, bob_token) as bob:
            assert WHOAMI in {tool.name for tool in (await alice.list_tools()).tools}  # listed with the lister token
            mine = await alice.call_tool(WHOAMI, {})
            theirs = await bob.call_tool(WHOAMI, {})
    assert (mine.is_error, mine.structured_content) == (False, {"sub": "alice"})
    assert (theirs.is_error, theirs.structured_content) == (False, {"sub": "bob"})
    # The RFC 8693 section 2.1 request: the caller's token as subject, the upstream as audience, Basic client auth.
    first = s.authorization.requests[0]
    assert first["form"] == {
        "grant_type": GRANT,
        "subject_token": alice_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "audience": s.upstream.url,
    }
    basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    assert first["headers"]["authorization"] == f"Basic {basic}"
    # The upstream got the lister token and the two exchanged tokens, never a caller's own.
    assert set(s.upstream.seen) == {f"Bearer {LISTER_TOKEN}", *(f"Bearer {token}" for token in s.authorization.issued)}
    assert s.upstream.refused == 0


async def test_resource_scope_and_requested_type_are_sent_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"resource": "https://crm.example.test/", "scope": "crm:read crm:write", "audience": "another"}
    extra["requestedTokenType"] = "urn:ietf:params:oauth:token-type:jwt"
    async with scene(tmp_path, monkeypatch) as s:
        exchanger = s.source.exchanger
        assert exchanger is not None
        form = exchanger.form("subject")
    assert form["audience"] == s.upstream.url and "resource" not in form  # the defaults
    async with scene(tmp_path, monkeypatch, make_entry=lambda url, endpoint: _entry(url, endpoint, extra)) as s:
        async with mcp_client(s.url, s.token("alice")) as alice:
            result = await alice.call_tool(WHOAMI, {})
    # The upstream checks its own URL as the audience: a configured other audience is refused there.
    assert result.is_error is True and s.upstream.refused >= 1
    sent = s.authorization.requests[0]["form"]
    assert (sent["audience"], sent["resource"], sent["scope"]) == ("another", extra["resource"], extra["scope"])
    assert sent["requested_token_type"] == extra["requestedTokenType"]


def _entry(url: str, endpoint: str, extra: dict[str, Any]) -> dict[str, Any]:
    from tests._support.exchange import entry

    made = entry(url, endpoint)
    made["auth"] |= extra
    return made


async def test_one_exchange_per_caller_until_it_expires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch, lifetime=300) as s:
        exchanger = s.source.exchanger
        assert exchanger is not None
        async with mcp_client(s.url, s.token("alice")) as alice, mcp_client(s.url, s.token("bob")) as bob:
            for _ in range(3):
                assert (await alice.call_tool(WHOAMI, {})).structured_content == {"sub": "alice"}
            async with anyio.create_task_group() as tasks:  # bob's first calls, all at once: one exchange
                for _ in range(3):
                    tasks.start_soon(bob.call_tool, WHOAMI, {"delay": 0.05})
            assert len(s.authorization.requests) == 2 and exchanger.cached == 2
            # 280 s later the token is within the expiry skew: the next call exchanges again...
            exchanger.clock = lambda: time.monotonic() + 280
            assert (await alice.call_tool(WHOAMI, {})).structured_content == {"sub": "alice"}
            assert len(s.authorization.requests) == 3
            # ...and the upstream gets the new token on a connection of its own.
            assert s.upstream.seen[-1] == f"Bearer {s.authorization.issued[-1]}"
            assert s.source.private_count == 3  # alice's old one is released once idle


async def test_a_refused_exchange_fails_that_caller_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        s.authorization.refuse_subjects.add("mallory")
        async with mcp_client(s.url, s.token("mallory")) as mallory, mcp_client(s.url, s.token("bob")) as bob:
            results: dict[str, Any] = {}

            async def call(name: str, client: Any) -> None:
                results[name] = await client.call_tool(WHOAMI, {"delay": 0.2})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call, "mallory", mallory)
                tasks.start_soon(call, "bob", bob)
    refused = text_of(results["mallory"])
    assert results["mallory"].is_error is True
    assert refused == f"upstream '{SERVER}': the authorization server refused the token exchange (invalid_grant)"
    assert (results["bob"].is_error, results["bob"].structured_content) == (False, {"sub": "bob"})


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("error", "HTTP 500"), ("slow", "no answer within 1s"), ("down", "unreachable (ConnectError)")],
)
async def test_an_authorization_server_down_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, reason: str
) -> None:
    async with scene(tmp_path, monkeypatch, timeout=2) as s:
        if mode == "down":
            s.source.exchanger.spec = _unreachable(s.source.exchanger.spec)  # type: ignore[union-attr]
        else:
            s.authorization.mode = mode
        async with mcp_client(s.url, s.token("alice")) as alice:
            with anyio.fail_after(SLOW_SECONDS - 1):
                result = await alice.call_tool(WHOAMI, {})
    assert result.is_error is True
    assert text_of(result) == f"upstream '{SERVER}': the authorization server could not exchange the token: {reason}"


def _unreachable(spec: Any) -> Any:
    import dataclasses

    from apcore_mcp.testing import free_port

    return dataclasses.replace(spec, token_endpoint=f"http://127.0.0.1:{free_port()}/token")


async def test_a_call_without_a_validated_token_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with scene(tmp_path, monkeypatch, auth=False) as s, Client(f"{s.url}/mcp", mode="legacy") as anyone:
        result = await anyone.call_tool(WHOAMI, {})
        assert s.source.private_count == 0
    assert result.is_error is True
    assert text_of(result) == (
        f"upstream '{SERVER}' is called as the caller (token exchange), and this call carries no validated "
        "bearer token (authentication is off, or the call did not come over HTTP)"
    )
    assert s.authorization.requests == []
    assert f"Upstream '{SERVER}' calls as the caller (auth: token exchange) but authentication is off" in caplog.text


# -- the config -----------------------------------------------------------------------------------


def test_auth_is_checked_with_every_problem_at_once() -> None:
    document = {
        "mcpServers": {
            "local": {"command": "x", "auth": {"tokenEndpoint": "https://as.test/token"}},
            "open": {"url": "https://up.test/mcp", "sharing": "shared", "auth": {"tokenEndpoint": "https://as/t"}},
            "bad": {"url": "https://up.test/mcp", "auth": {"clientId": "me", "scope": 3, "colour": "red"}},
            "endpoint": {"url": "https://up.test/mcp", "auth": {"tokenEndpoint": "ftp://as.test/token"}},
            "notobject": {"url": "https://up.test/mcp", "auth": "yes"},
        }
    }
    with pytest.raises(UpstreamConfigError) as caught:
        parse_config(document, {})
    assert sorted(map(str, caught.value.problems)) == sorted(
        [
            "mcpServers.local.auth: only for url servers (a stdio server or an API has no bearer)",
            'mcpServers.open.sharing: "shared" cannot go with "auth": one connection would carry one caller\'s '
            'token for every caller (leave it out: "auth" means per-principal)',
            "mcpServers.bad.auth.colour: unknown field",
            "mcpServers.bad.auth.scope: must be a non-empty string",
            "mcpServers.bad.auth.tokenEndpoint: is required: the authorization server's token URL",
            "mcpServers.bad.auth: clientId and clientSecret go together (HTTP Basic client auth)",
            "mcpServers.endpoint.auth.tokenEndpoint: must start with http:// or https://",
            "mcpServers.notobject.auth: must be an object with at least tokenEndpoint",
        ]
    )


def test_auth_means_per_principal_and_its_secret_is_masked() -> None:
    auth = {"tokenEndpoint": "${AS}/token", "clientId": "c", "clientSecret": "${SECRET}"}
    entry: dict[str, Any] = {"url": "https://up.test/mcp", "auth": auth}
    config = parse_config({"mcpServers": {"up": entry}}, {"AS": "https://as.test", "SECRET": "s3cr3t-value"})
    spec = config.servers["up"]
    assert spec.sharing == "per-principal" and spec.token_exchange is not None
    assert spec.token_exchange.token_endpoint == "https://as.test/token"
    assert "s3cr3t-value" not in repr(spec) + repr(spec.token_exchange) + repr(spec.key)
    assert config.redactor.redact("secret s3cr3t-value") == "secret ***"
    session = parse_config(
        {"mcpServers": {"up": {**entry, "sharing": "per-session"}}}, {"AS": "https://a", "SECRET": "x"}
    )
    assert session.servers["up"].sharing == "per-session"


# -- the page ----------------------------------------------------------------------------------------


def page_block() -> dict[str, Any]:
    found = re.findall(rf"{re.escape(MARK)}\n```json\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(found) == 1, f"expected one marked json block in {PAGE.name}"
    document: dict[str, Any] = json.loads(found[0])
    return document


async def test_the_documented_entry_works_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [(name, documented)] = page_block()["mcpServers"].items()
    text = json.dumps(documented)

    def as_documented(url: str, endpoint: str) -> dict[str, Any]:
        replaced = text.replace(documented["url"], url).replace(documented["auth"]["tokenEndpoint"], endpoint)
        made: dict[str, Any] = json.loads(replaced)
        return made

    assert name == SERVER
    async with scene(tmp_path, monkeypatch, make_entry=as_documented) as s:
        async with mcp_client(s.url, s.token("alice")) as alice:
            result = await alice.call_tool(f"{name}.whoami", {})
    assert (result.is_error, result.structured_content) == (False, {"sub": "alice"})
