"""Who may call over HTTP, and as whom stdio calls run: the auth mode, its tokens or keys, scopes, identities.

Fail closed: anything an auth mode needs is required, and a credential configured for a mode
that is off is an error (an operator who set a JWKS URL but not ``auth`` would otherwise serve
every tool to anyone). Files named by settings are read by the app factory, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from apcore_mcp._addresses import is_loopback_address
from apcore_mcp.calls.principal import check_scopes, parse_api_key, parse_scope_rules
from apcore_mcp.settings.option import SettingError, check_positive, option, set_field, warn_renamed
from apcore_mcp.settings.upstreams import OLD_TOOLSETS_PREFIX, TOOLSETS_PREFIX

AUTH_MODES: tuple[str, ...] = ("none", "jwt", "api-key")
CHALLENGE_FORMS: tuple[str, ...] = ("http", "tool-result")
"""How a caller is asked to sign in (``calls/signin.py``)."""
MIN_HMAC_SECRET = 32
"""Characters an HS* shared secret needs at least (inline or read from a file)."""
HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_LISTS = (
    "auth_audience",
    "auth_algorithms",
    "auth_scopes",
    "auth_route_scopes",
    "auth_tool_scopes",
    "auth_public_tools",
    "auth_api_keys",
)
_JWT_FIELDS = ("auth_issuer", "auth_jwks_url", "auth_jwt_key", "auth_jwt_key_file")
_KEY_FIELDS = ("auth_api_keys", "auth_api_keys_file")
_ENTRY_CHECKS: dict[str, Callable[[Any, str], object]] = {
    "auth_scopes": check_scopes,
    "auth_route_scopes": parse_scope_rules,
    "auth_tool_scopes": parse_scope_rules,
    "auth_api_keys": lambda entries, what: [parse_api_key(entry, what) for entry in entries],
}


@dataclass(frozen=True, kw_only=True)
class AuthSettings:
    auth: str = option(
        "none",
        "who may call over HTTP: `none`, `jwt` (OAuth bearer tokens) or `api-key` (static keys); "
        "`/health` and `/ready` stay open",
        group="auth",
        kind="choice",
        choices=AUTH_MODES,
    )
    public_url: str | None = option(
        None,
        "the server's base URL as clients reach it, with any proxy path prefix (`https://example.com/sub`); "
        "resource URLs and the default audience derive from it",
        group="auth",
        metavar="URL",
        default_text="`http://HOST:PORT` (required with auth on a wildcard host)",
    )
    auth_issuer: str | None = option(None, "required `iss` of tokens (`jwt`)", group="auth", metavar="URL")
    auth_audience: tuple[str, ...] = option(
        (),
        "accepted `aud` values (`jwt`)",
        group="auth",
        kind="list",
        metavar="AUD",
        default_text="each endpoint's own resource URL, e.g. `PUBLIC_URL/mcp` (RFC 8707)",
    )
    auth_jwks_url: str | None = option(
        None, "JWKS of the issuer's signing keys (https, or http on loopback)", group="auth", metavar="URL"
    )
    auth_jwks_ttl: float = option(600.0, "seconds a fetched JWKS is reused", group="auth", kind="float")
    auth_jwt_key: str | None = option(
        None, "static verification key instead of a JWKS: a PEM public key or an HS secret", group="auth", secret=True
    )
    auth_jwt_key_file: str | None = option(
        None, "file holding the static verification key", group="auth", metavar="FILE"
    )
    auth_algorithms: tuple[str, ...] = option(
        ("RS256", "ES256"), "accepted JWT algorithms (`none` never)", group="auth", kind="list", metavar="ALG"
    )
    auth_scopes: tuple[str, ...] = option(
        (), "scopes every authenticated request needs", group="auth", kind="list", metavar="SCOPE"
    )
    auth_route_scopes: tuple[str, ...] = option(
        (),
        "scopes per path prefix: `/metrics=metrics:read`",
        group="auth",
        kind="list",
        metavar="PATH=SCOPE[ SCOPE]",
    )
    auth_tool_scopes: tuple[str, ...] = option(
        (),
        "scopes per tool glob: `admin.*=admin`",
        group="auth",
        kind="list",
        metavar="GLOB=SCOPE[ SCOPE]",
    )
    auth_public_tools: tuple[str, ...] = option(
        (),
        "tools (globs of module ids) anyone may list and call without credentials while auth protects the"
        " rest; a module's `mcp_public` metadata wins over them",
        group="auth",
        kind="list",
        metavar="GLOB",
    )
    auth_challenge: str = option(
        "http",
        "how a caller is asked to sign in for a protected tool: `http` (401/403 with `WWW-Authenticate`,"
        ' as Claude\'s clients expect) or `tool-result` (a tool error with `_meta["mcp/www_authenticate"]`,'
        " as ChatGPT's apps expect)",
        group="auth",
        kind="choice",
        choices=CHALLENGE_FORMS,
    )
    auth_id_claim: str = option("sub", "claim giving the caller identity's id", group="auth")
    auth_roles_claim: str = option(
        "roles", "claim (dotted path) giving its roles: a list or a space-separated string", group="auth"
    )
    auth_api_keys: tuple[str, ...] = option(
        (),
        "accepted API keys, as hashes: `SHA256HEX:ID[:ROLE ROLE[:SCOPE SCOPE]]`",
        group="auth",
        kind="list",
        metavar="ENTRY",
        secret=True,
    )
    auth_api_keys_file: str | None = option(
        None, "file of API key entries, one a line (`#` comments)", group="auth", metavar="FILE"
    )
    auth_metrics: bool = option(True, "require a token on `/metrics` when auth is on", group="auth", kind="bool")
    auth_filter_tools: bool = option(
        False,
        "list only the tools the caller may call (apcore ACL and tool scopes); a call of another is"
        " answered as for an absent tool",
        group="auth",
        kind="bool",
    )
    auth_admin_scope: str = option(
        "mcp:admin",
        "scope a token needs for the operator routes (`/admin/tools`: which tools are hidden and why)",
        group="auth",
        metavar="SCOPE",
    )
    auth_approver_scope: str = option(
        "mcp:approve",
        "scope a token needs to decide on the approval page (`/approvals/...`) of a `person` approval",
        group="auth",
        metavar="SCOPE",
    )
    stdio_identity: str | None = option(
        None, "identity id stdio (and in-memory) calls run as; none when unset", group="auth", metavar="ID"
    )
    stdio_identity_type: str = option("user", "type of that identity", group="auth")
    stdio_roles: tuple[str, ...] = option((), "roles of that identity", group="auth", kind="list", metavar="ROLE")


def _strings(settings: AuthSettings, name: str) -> tuple[str, ...]:
    values = getattr(settings, name)
    if values is None:
        return ()
    if isinstance(values, str) or any(not isinstance(value, str) or not value.strip() for value in values):
        raise SettingError(name, f"{name} must be a list of non-empty strings")
    return tuple(value.strip() for value in values)


def check_auth(s: AuthSettings, *, wildcard_host: bool, execute_token: str | None) -> None:
    """The auth settings, given the two others they depend on.

    ``wildcard_host``: the server binds every interface, so no URL of its own can be derived
    for tokens' audience; ``execute_token``: the explorer's own token, which auth replaces.
    """
    if s.auth not in AUTH_MODES:
        raise SettingError("auth", f"auth must be one of: {', '.join(AUTH_MODES)}, got {s.auth!r}")
    if s.public_url is not None:
        set_field(s, "public_url", check_url(s.public_url, "public_url", https_only=False))
    elif s.auth != "none" and wildcard_host:
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
    if s.auth_challenge not in CHALLENGE_FORMS:
        raise SettingError(
            "auth_challenge", f"auth_challenge must be one of: {', '.join(CHALLENGE_FORMS)}, got {s.auth_challenge!r}"
        )
    for name in ("auth_id_claim", "auth_roles_claim", "stdio_identity_type"):
        if not isinstance(getattr(s, name), str) or not getattr(s, name).strip():
            raise SettingError(name, f"{name} must not be empty")
    if any(ch.isspace() for ch in s.auth_admin_scope) or not s.auth_admin_scope:
        raise SettingError("auth_admin_scope", "auth_admin_scope must be one scope: a single word")
    if any(ch.isspace() for ch in s.auth_approver_scope) or not s.auth_approver_scope:
        raise SettingError("auth_approver_scope", "auth_approver_scope must be one scope: a single word")
    if s.stdio_identity is not None and (not isinstance(s.stdio_identity, str) or not s.stdio_identity.strip()):
        raise SettingError("stdio_identity", "stdio_identity must not be empty")
    if any(any(ch.isspace() for ch in role) for role in s.stdio_roles):
        raise SettingError("stdio_roles", "stdio_roles entries must be single words")
    _check_mode(s, execute_token)


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


def _check_mode(s: AuthSettings, execute_token: str | None) -> None:
    """What each mode needs, and nothing configured for a mode that is off."""
    unused = {"none": _JWT_FIELDS + _KEY_FIELDS, "jwt": _KEY_FIELDS, "api-key": _JWT_FIELDS}[s.auth]
    for name in unused:
        if getattr(s, name):
            raise SettingError(name, f"{name} is set but auth is {s.auth!r}")
    if s.auth != "none" and execute_token is not None:
        raise SettingError("execute_token", "execute_token does not apply when auth is on (explorer calls use auth)")
    if s.auth == "none" and s.auth_public_tools:
        raise SettingError(
            "auth_public_tools", "auth_public_tools is set but auth is 'none': every tool is public already"
        )
    if s.auth == "api-key" and not (s.auth_api_keys or s.auth_api_keys_file):
        raise SettingError("auth_api_keys", "auth 'api-key' needs auth_api_keys or auth_api_keys_file")
    if s.auth == "jwt":
        _check_jwt(s)


def _check_jwt(s: AuthSettings) -> None:
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
