"""The ``auth`` settings group: fail closed, each error naming its field; env and CLI spellings; files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apcore_mcp.calls.principal import stdio_identity
from apcore_mcp.http.app import create_app
from apcore_mcp.http.tokens import hash_api_key, load_static_key
from apcore_mcp.run.cli import build_parser
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.settings.env import settings_from_env

from tests._support.auth import ISSUER, JWKS_URL, api_key_entry, rsa_key
from tests._support.modules import make_executor

KEY = api_key_entry("k" * 40, "alice", "writer", "tools:call")
JWT: dict[str, Any] = {"auth": "jwt", "auth_issuer": ISSUER, "auth_jwks_url": JWKS_URL}


def test_auth_is_off_by_default() -> None:
    settings = Settings()
    assert settings.auth == "none"
    assert settings.auth_metrics is True and settings.auth_filter_tools is False
    assert settings.auth_algorithms == ("RS256", "ES256")
    assert stdio_identity(settings) is None


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"auth": "oauth"}, "auth"),
        ({"auth": "jwt", "auth_jwks_url": JWKS_URL}, "auth_issuer"),
        ({"auth": "jwt", "auth_issuer": ISSUER}, "auth_jwks_url"),
        ({**JWT, "auth_jwt_key": "x" * 40}, "auth_jwks_url"),
        ({**JWT, "auth_jwks_url": "http://issuer.example.test/jwks"}, "auth_jwks_url"),
        ({**JWT, "auth_algorithms": ("none",)}, "auth_algorithms"),
        ({**JWT, "auth_algorithms": ("HS256",)}, "auth_algorithms"),
        ({"auth": "jwt", "auth_issuer": ISSUER, "auth_jwt_key": "x" * 40, "auth_algorithms": ("HS256", "RS256")}, "auth_algorithms"),
        ({"auth": "jwt", "auth_issuer": ISSUER, "auth_jwt_key": "short", "auth_algorithms": ("HS256",)}, "auth_jwt_key"),
        ({"auth_jwks_url": JWKS_URL}, "auth_jwks_url"),
        ({"auth_api_keys": (KEY,)}, "auth_api_keys"),
        ({"auth": "api-key"}, "auth_api_keys"),
        ({"auth": "api-key", "auth_api_keys": ("abc:alice",)}, "auth_api_keys"),
        ({"auth": "api-key", "auth_api_keys": (KEY,), "execute_token": "t" * 20}, "execute_token"),
        ({"auth": "api-key", "auth_api_keys": (KEY,), "host": "0.0.0.0"}, "public_url"),
        ({**JWT, "auth_jwks_url": "http://127.evil.example/jwks"}, "auth_jwks_url"),  # a name, not loopback
        ({"public_url": "https://example.com/x?y=1"}, "public_url"),
        ({"public_url": "https://user:pw@example.com"}, "public_url"),
        ({"public_url": "ftp://example.com"}, "public_url"),
        ({"auth_scopes": ('a"b',)}, "auth_scopes"),
        ({"auth_route_scopes": ("/metrics",)}, "auth_route_scopes"),
        ({"auth_tool_scopes": ("admin.*= ",)}, "auth_tool_scopes"),
        ({"auth_jwks_ttl": 0}, "auth_jwks_ttl"),
        ({"auth_id_claim": " "}, "auth_id_claim"),
        ({"stdio_identity": ""}, "stdio_identity"),
        ({"stdio_roles": ("two words",)}, "stdio_roles"),
    ],
)  # fmt: skip
def test_bad_auth_settings_name_their_field(values: dict[str, Any], field: str) -> None:
    with pytest.raises(SettingError) as refused:
        Settings(**values)
    assert refused.value.field == field


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.2", True), ("::1", True), ("127.evil.example", False)])
def test_loopback_means_a_loopback_address_not_a_name_that_looks_like_one(host: str, loopback: bool) -> None:
    assert Settings(host=host).is_loopback is loopback  # decides whether the explorer demands a token


def test_values_are_normalized() -> None:
    settings = Settings(
        **JWT, public_url="https://example.com/sub/", auth_scopes=(" a ",), stdio_identity="op", stdio_roles=("x",)
    )
    assert settings.public_url == "https://example.com/sub"
    assert settings.auth_scopes == ("a",)
    assert settings.stdio_roles == ("x",)
    # Plain http is fine for a loopback issuer.
    assert Settings(**{**JWT, "auth_jwks_url": "http://127.0.0.1:9/k"}).auth_jwks_url == "http://127.0.0.1:9/k"


def test_environment_and_command_line_spellings() -> None:
    settings, _ = settings_from_env(
        {
            "APCORE_MCP_AUTH": "api-key",
            "APCORE_MCP_AUTH_API_KEYS": KEY,
            "APCORE_MCP_AUTH_TOOL_SCOPES": "admin.*=admin root,files.purge=files:write",
            "APCORE_MCP_AUTH_METRICS": "false",
            "APCORE_MCP_STDIO_IDENTITY": "ops",
            "APCORE_MCP_STDIO_ROLES": "writer,admin",
        }
    )
    assert settings.auth_tool_scopes == ("admin.*=admin root", "files.purge=files:write")
    assert settings.auth_metrics is False
    identity = stdio_identity(settings)
    assert identity is not None and (identity.id, identity.type, identity.roles) == ("ops", "user", ("writer", "admin"))
    args = build_parser().parse_args(
        ["--auth", "jwt", "--auth-issuer", ISSUER, "--auth-jwks-url", JWKS_URL, "--no-auth-metrics",
         "--auth-filter-tools", "--auth-route-scopes", "/metrics=metrics:read", "--public-url", "https://x.test"]
    )  # fmt: skip
    assert (args.auth, args.auth_metrics, args.auth_filter_tools) == ("jwt", False, True)
    assert args.auth_route_scopes == ["/metrics=metrics:read"]


def test_key_files_are_read_by_the_app_factory(tmp_path: Path) -> None:
    missing = Settings(**{**JWT, "auth_jwks_url": None, "auth_jwt_key_file": str(tmp_path / "nope.pem")})
    with pytest.raises(SettingError) as refused:
        create_app(make_executor(), missing)
    assert refused.value.field == "auth_jwt_key_file"

    pem = tmp_path / "key.pem"
    pem.write_text(rsa_key().public_pem())
    create_app(make_executor(), Settings(**{**JWT, "auth_jwks_url": None, "auth_jwt_key_file": str(pem)}))
    wrong_family = Settings(
        **{**JWT, "auth_jwks_url": None, "auth_jwt_key_file": str(pem), "auth_algorithms": ("ES256",)}
    )
    with pytest.raises(SettingError, match="fits none"):
        create_app(make_executor(), wrong_family)

    hs = {**JWT, "auth_jwks_url": None, "auth_jwt_key_file": str(tmp_path / "hs.txt"), "auth_algorithms": ("HS256",)}
    (tmp_path / "hs.txt").write_text("short\n")  # as short as inline, which is refused
    with pytest.raises(SettingError, match="at least 32") as refused:
        create_app(make_executor(), Settings(**hs))
    assert refused.value.field == "auth_jwt_key_file"
    (tmp_path / "hs.txt").write_text("s" * 32 + "\n")  # the file's line break is not part of the secret
    create_app(make_executor(), Settings(**hs))
    assert load_static_key("s" * 32 + "\n", ["HS256"])[0] == b"s" * 32

    keys = tmp_path / "keys.txt"
    keys.write_text(f"# ops\n{hash_api_key('k' * 40)}:ops\nnot-a-hash:bob\n")
    with pytest.raises(SettingError, match=r"line 3") as refused:
        create_app(make_executor(), Settings(auth="api-key", auth_api_keys_file=str(keys)))
    assert refused.value.field == "auth_api_keys_file"
    assert "not-a-hash" not in str(refused.value)
