"""Settings that only mean something under another setting: set alone, they stop the start.

An operator who sets ``--auth-tool-scopes`` but forgets ``--auth`` would otherwise run an open
server believing its tools are scoped; one who sets ``--rate-burst`` without ``--rate-limit``
believes calls are limited. Each entry of ``NEEDS`` names a setting, the setting it depends on,
and when that dependency holds; a value different from the setting's default while the
dependency does not hold is a ``SettingError`` naming both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from apcore_mcp.settings.fields import SettingsFields
from apcore_mcp.settings.option import SettingError
from apcore_mcp.settings.upstreams import MOUNTING, SOURCES, mounts_upstreams


@dataclasses.dataclass(frozen=True, slots=True)
class Need:
    """``setting`` does something only when ``holds(settings)``; ``what`` says that condition."""

    setting: str
    needs: str
    what: str
    holds: Callable[[SettingsFields], bool]


def _auth_on(s: SettingsFields) -> bool:
    return s.auth != "none"


def _jwt(s: SettingsFields) -> bool:
    return s.auth == "jwt"


def _config(s: SettingsFields) -> bool:
    return mounts_upstreams(s)


_AUTH = "auth is 'none' (set --auth jwt or --auth api-key)"
_JWT = "auth is not 'jwt'"
_RESUMABLE = "streams are not resumable (resumable is off, the server is stateless, or json_response is on)"
_CONFIG = "neither mcp_config nor from_openapi is given"

NEEDS: tuple[Need, ...] = (
    *(Need(name, "auth", _AUTH, _auth_on) for name in ("auth_scopes", "auth_route_scopes", "auth_tool_scopes")),
    Need("auth_metrics", "auth", _AUTH, _auth_on),
    Need("auth_admin_scope", "auth", _AUTH, _auth_on),
    # With auth on the operator routes are always served (to the admin scope): the switch is for auth off.
    Need(
        "admin_routes",
        "auth 'none'",
        "auth is on: the operator routes are served to auth_admin_scope",
        lambda s: not _auth_on(s),
    ),
    # Filtering also applies the ACL, which sees an identity over stdio when one is configured.
    Need(
        "auth_filter_tools",
        "auth",
        "auth is 'none' and no stdio_identity is set",
        lambda s: _auth_on(s) or s.stdio_identity is not None,
    ),
    *(
        Need(name, "auth", _JWT, _jwt)
        for name in ("auth_audience", "auth_algorithms", "auth_id_claim", "auth_roles_claim", "auth_jwks_ttl")
    ),
    *(
        Need(name, "stdio_identity", "stdio_identity is not set", lambda s: s.stdio_identity is not None)
        for name in ("stdio_identity_type", "stdio_roles")
    ),
    Need("rate_burst", "rate_limit", "rate_limit is not set", lambda s: s.rate_limit is not None),
    Need(
        "max_caller_share",
        "max_concurrent_calls",
        "max_concurrent_calls is not set",
        lambda s: s.max_concurrent_calls is not None,
    ),
    Need("redis_prefix", "redis_url", "redis_url is not set", lambda s: s.redis_url is not None),
    *(
        Need(name, "resumable", _RESUMABLE, lambda s: s.keeps_stream_events)
        for name in ("resume_max_bytes", "resume_stream_max_bytes", "sse_retry_ms")
    ),
    Need("explorer_prefix", "explorer", "explorer is off", lambda s: s.explorer),
    Need("allow_execute", "explorer", "explorer is off", lambda s: s.explorer),
    Need("execute_token", "allow_execute", "allow_execute is off", lambda s: s.allow_execute),
    *(Need(name, "mcp_config", _CONFIG, _config) for name in MOUNTING[len(SOURCES) :]),
)


def check_needs(s: SettingsFields) -> None:
    """Refuse a setting changed from its default whose dependency does not hold (see ``NEEDS``)."""
    defaults = {f.name: f.default for f in dataclasses.fields(s)}
    for need in NEEDS:
        if getattr(s, need.setting) != defaults[need.setting] and not need.holds(s):
            raise SettingError(
                need.setting, f"{need.setting} does nothing here: it needs {need.needs}, but {need.what}"
            )
