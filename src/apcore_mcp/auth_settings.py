"""The checks of the ``auth`` settings group (``Settings`` runs them on construction).

Fail closed: anything an auth mode needs is required, and a credential configured for a mode
that is off is an error (an operator who set a JWKS URL but not ``auth`` would otherwise serve
every tool to anyone). Files named by settings are read by the app factory, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from apcore_mcp.limits import is_loopback_address
from apcore_mcp.options import (
    AUTH_MODES,
    OLD_TOOLSETS_PREFIX,
    TOOLSETS_PREFIX,
    WILDCARD_HOSTS,
    SettingError,
    check_positive,
    set_field,
    warn_renamed,
)
from apcore_mcp.principal import check_scopes, parse_api_key, parse_scope_rules

MIN_HMAC_SECRET = 32
"""Characters an HS* shared secret needs at least (inline or read from a file)."""

if TYPE_CHECKING:
    from apcore_mcp.settings import Settings

HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_LISTS = ("auth_audience", "auth_algorithms", "auth_scopes", "auth_route_scopes", "auth_tool_scopes", "auth_api_keys")
_JWT_FIELDS = ("auth_issuer", "auth_jwks_url", "auth_jwt_key", "auth_jwt_key_file")
_KEY_FIELDS = ("auth_api_keys", "auth_api_keys_file")
_ENTRY_CHECKS: dict[str, Callable[[Any, str], object]] = {
    "auth_scopes": check_scopes,
    "auth_route_scopes": parse_scope_rules,
    "auth_tool_scopes": parse_scope_rules,
    "auth_api_keys": lambda entries, what: [parse_api_key(entry, what) for entry in entries],
}


def _strings(settings: Settings, name: str) -> tuple[str, ...]:
    values = getattr(settings, name)
    if values is None:
        return ()
    if isinstance(values, str) or any(not isinstance(value, str) or not value.strip() for value in values):
        raise SettingError(name, f"{name} must be a list of non-empty strings")
    return tuple(value.strip() for value in values)


def check_auth(s: Settings) -> None:
    if s.auth not in AUTH_MODES:
        raise SettingError("auth", f"auth must be one of: {', '.join(AUTH_MODES)}, got {s.auth!r}")
    if s.public_url is not None:
        set_field(s, "public_url", check_url(s.public_url, "public_url", https_only=False))
    elif s.auth != "none" and s.host.lower() in WILDCARD_HOSTS:
        raise SettingError("public_url", "public_url is required when auth is on and the host is a wildcard address")
    for name in (*_LISTS, "stdio_roles"):
        set_field(s, name, _strings(s, name))
    set_field(s, "auth_route_scopes", tuple(_renamed_route(entry) for entry in s.auth_route_scopes))
    for name, check in _ENTRY_CHECKS.items():
        try:
            check(getattr(s, name), name)
        except ValueError as exc:
            raise SettingError(name, str(exc)) from None
    check_positive(s, "auth_jwks_ttl")
    for name in ("auth_id_claim", "auth_roles_claim", "stdio_identity_type"):
        if not isinstance(getattr(s, name), str) or not getattr(s, name).strip():
            raise SettingError(name, f"{name} must not be empty")
    if s.stdio_identity is not None and (not isinstance(s.stdio_identity, str) or not s.stdio_identity.strip()):
        raise SettingError("stdio_identity", "stdio_identity must not be empty")
    if any(any(ch.isspace() for ch in role) for role in s.stdio_roles):
        raise SettingError("stdio_roles", "stdio_roles entries must be single words")
    _check_mode(s)


def _renamed_route(entry: str) -> str:
    """A rule on the old toolset paths (``/scopes/team``) guards the new ones (``/toolsets/team``).

    Without this, a rule written for the old paths would silently stop guarding the endpoints.
    """
    path, sep, needed = entry.partition("=")
    if path != OLD_TOOLSETS_PREFIX and not path.startswith(OLD_TOOLSETS_PREFIX + "/"):
        return entry
    renamed = TOOLSETS_PREFIX + path[len(OLD_TOOLSETS_PREFIX) :]
    warn_renamed(f"auth_route_scopes path {path}", renamed, operator=True, stacklevel=6)
    return renamed + sep + needed


def _check_mode(s: Settings) -> None:
    """What each mode needs, and nothing configured for a mode that is off."""
    unused = {"none": _JWT_FIELDS + _KEY_FIELDS, "jwt": _KEY_FIELDS, "api-key": _JWT_FIELDS}[s.auth]
    for name in unused:
        if getattr(s, name):
            raise SettingError(name, f"{name} is set but auth is {s.auth!r}")
    if s.auth != "none" and s.execute_token is not None:
        raise SettingError("execute_token", "execute_token does not apply when auth is on (explorer calls use auth)")
    if s.auth == "api-key" and not (s.auth_api_keys or s.auth_api_keys_file):
        raise SettingError("auth_api_keys", "auth 'api-key' needs auth_api_keys or auth_api_keys_file")
    if s.auth == "jwt":
        _check_jwt(s)


def _check_jwt(s: Settings) -> None:
    if not s.auth_issuer:
        raise SettingError("auth_issuer", "auth 'jwt' needs auth_issuer")
    sources = [name for name in ("auth_jwks_url", "auth_jwt_key", "auth_jwt_key_file") if getattr(s, name)]
    if len(sources) != 1:
        raise SettingError(
            "auth_jwks_url", "auth 'jwt' needs exactly one of auth_jwks_url, auth_jwt_key, auth_jwt_key_file"
        )
    if s.auth_jwks_url:
        set_field(s, "auth_jwks_url", check_url(s.auth_jwks_url, "auth_jwks_url", https_only=True))
    algorithms = set(s.auth_algorithms)
    unknown = algorithms - HMAC_ALGORITHMS - ASYMMETRIC_ALGORITHMS
    if not algorithms or unknown:
        raise SettingError("auth_algorithms", f"auth_algorithms: unsupported {sorted(unknown) or 'empty list'}")
    if algorithms & HMAC_ALGORITHMS and (algorithms - HMAC_ALGORITHMS or s.auth_jwks_url):
        raise SettingError("auth_algorithms", "HS* algorithms need a static secret and cannot be mixed with others")
    if algorithms <= HMAC_ALGORITHMS and s.auth_jwt_key is not None and len(s.auth_jwt_key) < MIN_HMAC_SECRET:
        raise SettingError("auth_jwt_key", f"an HS secret must be at least {MIN_HMAC_SECRET} characters")


def check_url(url: str, name: str, *, https_only: bool) -> str:
    """An absolute http(s) URL without query or fragment, trailing slash dropped.

    ``https_only`` still allows plain http to a loopback host (a local issuer, tests).
    """
    parts = urlsplit(url.strip()) if isinstance(url, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or parts.query
        or parts.fragment
    ):
        raise SettingError(name, f"{name} must be an http(s) URL without credentials, query or fragment, got {url!r}")
    if https_only and parts.scheme != "https" and not is_loopback_address(parts.hostname):
        raise SettingError(name, f"{name} must use https (plain http only on loopback)")
    return url.strip().rstrip("/")
