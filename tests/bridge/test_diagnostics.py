"""``hidden_tools``: each registered module not served to someone, with a machine-readable reason."""

from __future__ import annotations

from apcore import Executor, Registry
from apcore.acl import ACL, ACLRule

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.diagnostics import hidden_tools
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry
from tests._support.modules import Echo


def executor() -> Executor:
    registry = Registry()
    for module_id in ("demo.echo", "admin.purge", "ops.restart"):
        registry.register(module_id, Echo())
    registry.register("demo.broken", Echo)  # the class, not an instance: registered, never served
    rules = [
        ACLRule(callers=["@external"], targets=["demo.*", "admin.*"], effect="allow"),
        ACLRule(callers=["@external"], targets=["ops.*"], effect="allow", conditions={"roles": ["ops"]}),
    ]
    return Executor(registry, acl=ACL(rules, default_effect="deny"))


def reasons(bridge: Bridge) -> dict[str, list[dict[str, object]]]:
    return {entry["module"]: entry["reasons"] for entry in hidden_tools(bridge, None)}


def test_each_reason_is_named() -> None:
    settings = Settings(
        auth="api-key", auth_api_keys=(api_key_entry("k" * 40, "op"),), auth_tool_scopes=("admin.*=admin",)
    )
    found = reasons(Bridge.build(executor(), settings))
    assert set(found) == {"admin.purge", "ops.restart", "demo.broken"}  # demo.echo is served to all
    assert found["admin.purge"] == [{"kind": "scope", "scopes": ["admin"]}]
    refused = [{"caller": "none"}, {"caller": "anonymous"}, {"caller": "user", "roles": []}]
    assert found["ops.restart"] == [{"kind": "acl", "refused": refused}]
    (broken,) = found["demo.broken"]
    assert broken["kind"] == "discovery" and "instead of an instance" in str(broken["problem"])


def test_filters_and_auth_off() -> None:
    found = reasons(Bridge.build(executor(), Settings(prefix="demo.")))
    assert found["admin.purge"] == [{"kind": "filter", "filter": "prefix"}]
    assert found["ops.restart"] == [{"kind": "filter", "filter": "prefix"}]
    assert "demo.echo" not in found
    tagged = reasons(Bridge.build(executor(), Settings(tags=["billing"])))
    assert tagged["demo.echo"] == [{"kind": "filter", "filter": "tags"}]


def test_a_tool_that_is_not_public_is_hidden_from_callers_without_credentials() -> None:
    settings = Settings(auth="api-key", auth_api_keys=(api_key_entry("k" * 40, "op"),), auth_public_tools=("demo.*",))
    found = reasons(Bridge.build(executor(), settings))
    assert "demo.echo" not in found  # public, and the ACL lets everyone reach it
    assert found["admin.purge"] == [{"kind": "not_public"}]
    assert found["ops.restart"][0] == {"kind": "not_public"}
