"""FR-SERVER validation messages (SRS 3.5) and the Host/Origin policy."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from typing import Any

import pytest

from apcore_mcp.http.guard import HostPolicy
from apcore_mcp.settings import Settings, normalize_transport

# -- Settings validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "name must not be empty"),
        ({"name": "n" * 256}, "name must not exceed 255 characters"),
        ({"version": ""}, "version must not be empty"),
        ({"tags": ("",)}, "Tag values must not be empty"),
        ({"tags": ("public", "")}, "Tag values must not be empty"),
        ({"prefix": ""}, "prefix must not be empty"),
        ({"host": ""}, "Host must not be empty"),
        ({"host": "   "}, "Host must not be empty"),
        ({"port": 65536}, "Port must be between 0 (any free port) and 65535, got 65536"),
        ({"port": -1}, "Port must be between 0 (any free port) and 65535, got -1"),
        ({"log_level": "TRACE"}, "Unknown log level: 'TRACE'. Must be one of: DEBUG, INFO, WARNING, ERROR"),
    ],
)
def test_invalid_settings_messages(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Settings(**kwargs)


def test_defaults() -> None:
    settings = Settings()
    assert settings.name == "apcore-mcp"
    assert settings.version is None
    assert settings.host == "127.0.0.1"
    assert settings.port == 8000
    assert settings.tags is None
    assert settings.prefix is None


@pytest.mark.parametrize("port", [1, 65535])
def test_port_boundaries_accepted(port: int) -> None:
    assert Settings(port=port).port == port


def test_name_of_255_characters_accepted() -> None:
    assert Settings(name="n" * 255).name == "n" * 255
    assert Settings(name="x").name == "x"


def test_valid_values_are_kept() -> None:
    settings = Settings(name="my-tools", version="2.0.0", tags=("public", "stable"), prefix="api.")
    assert settings.name == "my-tools"
    assert settings.version == "2.0.0"
    assert settings.server_version() == "2.0.0"
    assert settings.tags == ("public", "stable")
    assert settings.prefix == "api."


@pytest.mark.parametrize(
    ("given", "stored"), [("debug", "DEBUG"), ("Info", "INFO"), ("WARNING", "WARNING"), ("error", "ERROR")]
)
def test_log_level_is_case_insensitive(given: str, stored: str) -> None:
    assert Settings(log_level=given).log_level == stored


def test_log_level_none_is_kept() -> None:
    assert Settings().log_level is None


# -- composition ----------------------------------------------------------------------------------


def test_settings_are_composed_from_one_dataclass_per_concept() -> None:
    """Each setting is declared once, by its concept; ``Settings`` reads them all flat, in concept order."""
    from apcore_mcp.settings.auth import AuthSettings
    from apcore_mcp.settings.identity import IdentitySettings
    from apcore_mcp.settings.limits import LimitSettings
    from apcore_mcp.settings.logs import LogSettings
    from apcore_mcp.settings.network import NetworkSettings
    from apcore_mcp.settings.protocol import ProtocolSettings
    from apcore_mcp.settings.replicas import ReplicaSettings
    from apcore_mcp.settings.service import ServiceSettings
    from apcore_mcp.settings.upstreams import UpstreamSettings

    concepts = [
        IdentitySettings,
        NetworkSettings,
        ProtocolSettings,
        ServiceSettings,
        LimitSettings,
        LogSettings,
        ReplicaSettings,
        AuthSettings,
        UpstreamSettings,
    ]
    declared = [item.name for concept in concepts for item in dataclasses.fields(concept)]
    assert [item.name for item in dataclasses.fields(Settings)] == declared
    assert len(set(declared)) == len(declared)
    settings = Settings(port=9001, explorer=True, prefix="api.")
    assert (settings.port, settings.explorer, settings.prefix) == (9001, True, "api.")
    assert isinstance(settings, NetworkSettings) and isinstance(settings, AuthSettings)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.port = 1  # type: ignore[misc]


def test_the_command_line_help_loads_no_server() -> None:
    """``apcore-mcp --help`` reads the settings declarations only: no Starlette, uvicorn, MCP server or limiter."""
    command = [sys.executable, "-X", "importtime", "-m", "apcore_mcp", "--help"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    heavy = ("starlette", "uvicorn", "mcp.server", "apcore_mcp.http", "apcore_mcp.calls.limits", "apcore_mcp.bridge")
    assert "apcore_mcp.settings" in loaded and "--toolset" in run.stdout
    assert sorted(name for name in loaded if name.startswith(heavy)) == []


# -- transport ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "normalized"),
    [("stdio", "stdio"), ("STDIO", "stdio"), ("Streamable-HTTP", "streamable-http"), ("SSE", "sse")],
)
def test_transport_is_case_insensitive(given: str, normalized: str) -> None:
    assert normalize_transport(given) == normalized


def test_unknown_transport_message() -> None:
    message = "Unknown transport: 'websocket'. Must be one of: stdio, streamable-http, sse"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        normalize_transport("websocket")


@pytest.mark.parametrize("transport", ["", "http", "streamable_http", "stdio "])
def test_other_transports_rejected(transport: str) -> None:
    with pytest.raises(ValueError, match="^Unknown transport: "):
        normalize_transport(transport)


# -- HostPolicy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "localhost:1",
        "127.0.0.1",
        "127.0.0.1:9999",
        "[::1]",
        "[::1]:8000",
        "LOCALHOST:80",
    ],
)
def test_loopback_names_allowed_on_any_port(host: str) -> None:
    assert HostPolicy.for_settings(Settings()).host_allowed(host) is True


@pytest.mark.parametrize("host", ["evil.com", "evil.com:8000", "localhost.evil.com", "127.0.0.2:8000", "", None])
def test_other_hosts_rejected(host: str | None) -> None:
    assert HostPolicy.for_settings(Settings()).host_allowed(host) is False


def test_wildcard_bind_still_rejects_unknown_hosts() -> None:
    policy = HostPolicy.for_settings(Settings(host="0.0.0.0"))
    assert policy.host_allowed("evil.com") is False
    assert policy.host_allowed("evil.com:8000") is False
    assert policy.host_allowed("0.0.0.0:8000") is False
    assert policy.host_allowed("localhost:8000") is True


def test_allowed_hosts_entries() -> None:
    policy = HostPolicy.for_settings(
        Settings(host="0.0.0.0", allowed_hosts=("api.example.com", "tools.example.com:8443"))
    )
    allowed = ["api.example.com", "api.example.com:8000", "api.example.com:1", "tools.example.com:8443"]
    refused = ["tools.example.com:8000", "tools.example.com", "evil.com"]
    expected = {**dict.fromkeys(allowed, True), **dict.fromkeys(refused, False)}
    assert {host: policy.host_allowed(host) for host in expected} == expected


def test_specific_bound_host_is_allowed() -> None:
    policy = HostPolicy.for_settings(Settings(host="10.1.2.3"))
    assert policy.host_allowed("10.1.2.3:8000") is True
    assert policy.host_allowed("10.1.2.4:8000") is False


def test_origin_absent_is_allowed() -> None:
    assert HostPolicy.for_settings(Settings()).origin_allowed(None) is True


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "http://localhost", "https://127.0.0.1:8443", "http://[::1]:8000"]
)
def test_loopback_origins_allowed(origin: str) -> None:
    assert HostPolicy.for_settings(Settings()).origin_allowed(origin) is True


@pytest.mark.parametrize(
    "origin",
    ["http://evil.com", "https://evil.com:443", "null", "file://localhost", "http://localhost.evil.com", ""],
)
def test_foreign_origins_rejected(origin: str) -> None:
    assert HostPolicy.for_settings(Settings()).origin_allowed(origin) is False


def test_allowed_origins_entries_accepted() -> None:
    policy = HostPolicy.for_settings(
        Settings(host="0.0.0.0", allowed_origins=("https://app.example.com", "http://dev.example.com:*"))
    )
    allowed = ["https://app.example.com", "https://APP.example.com/", "http://dev.example.com:5173"]
    refused = ["http://app.example.com", "https://evil.com", "null"]
    expected = {**dict.fromkeys(allowed, True), **dict.fromkeys(refused, False)}
    assert {origin: policy.origin_allowed(origin) for origin in expected} == expected


def test_one_loopback_list_feeds_the_guard_and_the_settings() -> None:
    from apcore_mcp._addresses import LOOPBACK_NAMES, is_loopback_address
    from apcore_mcp.http.guard import HostPolicy
    from apcore_mcp.settings import LOOPBACK_HOSTS

    assert all(is_loopback_address(name) for name in LOOPBACK_NAMES)
    assert HostPolicy.for_settings(Settings()).hosts == LOOPBACK_NAMES  # 127.0.0.1 is among them
    assert HostPolicy.for_settings(Settings(host="0.0.0.0")).hosts == LOOPBACK_NAMES
    assert {*LOOPBACK_NAMES, "::1"} == LOOPBACK_HOSTS
    assert all(Settings(host=name.strip("[]")).is_loopback for name in LOOPBACK_NAMES)
