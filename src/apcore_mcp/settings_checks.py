"""The checks ``Settings`` runs on construction, one function a group of settings (``CHECKS``).

Each raises ``SettingError(field, message)``; a check may normalise a value in place.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING

from apcore_mcp.auth_settings import check_auth
from apcore_mcp.options import (
    APPROVAL_MODES,
    MAX_NAME_LENGTH,
    TOOL_MODES,
    SettingError,
    _as_tuple,
    check_positive,
    normalize_log_level,
    set_field,
)
from apcore_mcp.settings_needs import check_needs

if TYPE_CHECKING:
    from apcore_mcp.settings import Settings


def _check_identity(s: Settings) -> None:
    if not isinstance(s.name, str) or not s.name:
        raise SettingError("name", "name must not be empty")
    if len(s.name) > MAX_NAME_LENGTH:
        raise SettingError("name", f"name must not exceed {MAX_NAME_LENGTH} characters")
    if s.version is not None and (not isinstance(s.version, str) or not s.version):
        raise SettingError("version", "version must not be empty")


def _check_filters(s: Settings) -> None:
    if s.tags is not None:
        tags = _as_tuple(s.tags, "tags")
        if any(not isinstance(tag, str) or not tag for tag in tags):
            raise SettingError("tags", "Tag values must not be empty")
        set_field(s, "tags", tags or None)
    if s.prefix is not None and (not isinstance(s.prefix, str) or not s.prefix):
        raise SettingError("prefix", "prefix must not be empty")


def _check_network(s: Settings) -> None:
    if not isinstance(s.host, str) or not s.host.strip():
        raise SettingError("host", "Host must not be empty")
    if isinstance(s.port, bool) or not isinstance(s.port, int) or not 1 <= s.port <= 65535:
        raise SettingError("port", f"Port must be between 1 and 65535, got {s.port}")
    for what in ("allowed_hosts", "allowed_origins"):
        entries = _as_tuple(getattr(s, what), what)
        if any(not isinstance(entry, str) or not entry.strip() for entry in entries):
            raise SettingError(what, f"{what} entries must not be empty")
        set_field(s, what, tuple(entry.strip() for entry in entries))
    import ipaddress  # here, not at the top: this check is the only user

    proxies = _as_tuple(s.forwarded_allow_ips, "forwarded_allow_ips")
    for entry in proxies:
        try:
            ipaddress.ip_network(entry.strip() if isinstance(entry, str) else "")
        except ValueError:
            raise SettingError(
                "forwarded_allow_ips",
                f"forwarded_allow_ips entries must be IP addresses or CIDR networks without host bits "
                f"(10.0.0.0/8), got {entry!r}",
            ) from None
    set_field(s, "forwarded_allow_ips", tuple(str(entry).strip() for entry in proxies))


def _check_protocol(s: Settings) -> None:
    if s.approval not in APPROVAL_MODES:
        raise SettingError("approval", f"approval must be one of: {', '.join(APPROVAL_MODES)}, got {s.approval!r}")
    keys = _as_tuple(s.request_state_keys, "request_state_keys")
    if any(not isinstance(key, str) or len(key) < 32 for key in keys):
        raise SettingError("request_state_keys", "request_state_keys entries must be at least 32 characters")
    set_field(s, "request_state_keys", keys)
    if s.prompts_dir is not None and (not isinstance(s.prompts_dir, str) or not s.prompts_dir):
        raise SettingError("prompts_dir", "prompts_dir must not be empty")
    check_positive(s, "input_timeout")
    check_positive(s, "request_state_ttl")
    check_positive(s, "sse_retry_ms")
    _whole(s, "resume_max_bytes", 64 * 1024)
    _whole(s, "resume_stream_max_bytes", 1024)
    if s.resume_stream_max_bytes > s.resume_max_bytes:
        raise SettingError("resume_stream_max_bytes", "resume_stream_max_bytes must not exceed resume_max_bytes")


def _check_service(s: Settings) -> None:
    if isinstance(s.shutdown_timeout, bool) or not isinstance(s.shutdown_timeout, int | float):
        raise SettingError("shutdown_timeout", f"shutdown_timeout must be a number, got {s.shutdown_timeout!r}")
    if not s.shutdown_timeout >= 0:
        raise SettingError("shutdown_timeout", f"shutdown_timeout must be >= 0, got {s.shutdown_timeout}")
    set_field(s, "explorer_prefix", _check_prefix(s.explorer_prefix))
    if s.execute_token is not None and len(s.execute_token) < 16:
        raise SettingError("execute_token", "execute_token must be at least 16 characters")
    if s.log_level is not None:
        try:
            set_field(s, "log_level", normalize_log_level(s.log_level))
        except ValueError as exc:
            raise SettingError("log_level", str(exc)) from None


def _check_limits(s: Settings) -> None:
    if isinstance(s.sync_workers, bool) or not isinstance(s.sync_workers, int) or not 1 <= s.sync_workers <= 1024:
        raise SettingError("sync_workers", f"sync_workers must be an integer from 1 to 1024, got {s.sync_workers!r}")
    ceiling = s.timeout_ceiling_ms
    if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < 1):
        raise SettingError("timeout_ceiling_ms", f"timeout_ceiling_ms must be a positive integer, got {ceiling!r}")
    if isinstance(s.max_output_bytes, bool) or not isinstance(s.max_output_bytes, int) or s.max_output_bytes < 1024:
        raise SettingError(
            "max_output_bytes", f"max_output_bytes must be an integer >= 1024, got {s.max_output_bytes!r}"
        )
    share = s.max_caller_share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise SettingError("max_caller_share", f"max_caller_share must be a number in (0, 1], got {share!r}")


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _check_replicas(s: Settings) -> None:
    if s.redis_url is not None:
        if not isinstance(s.redis_url, str) or not s.redis_url.startswith(REDIS_SCHEMES):
            raise SettingError("redis_url", f"redis_url must start with one of: {', '.join(REDIS_SCHEMES)}")
        if importlib.util.find_spec("redis") is None:
            raise SettingError("redis_url", "redis_url needs the redis package: pip install 'apcore-mcp[redis]'")
    if not isinstance(s.redis_prefix, str) or not s.redis_prefix or any(c.isspace() for c in s.redis_prefix):
        raise SettingError("redis_prefix", "redis_prefix must be a non-empty string without spaces")
    if s.broadcast_changes and s.redis_url is None:
        raise SettingError("broadcast_changes", "broadcast_changes needs redis_url")
    if s.broadcast_changes and not s.dynamic:
        raise SettingError("broadcast_changes", "broadcast_changes needs dynamic (live registry changes)")


def _check_traffic(s: Settings) -> None:
    _whole(s, "max_body_bytes", 1024)
    _whole(s, "max_header_bytes", 1024)
    _whole(s, "max_json_depth", 1)
    _whole(s, "max_json_items", 1)
    _whole(s, "max_sessions", 1)
    _whole(s, "max_sessions_per_caller", 1)
    for name in ("header_timeout", "body_timeout", "session_idle_timeout"):
        check_positive(s, name)
    if s.rate_limit is not None:
        check_positive(s, "rate_limit")
    if s.rate_burst is not None:
        _whole(s, "rate_burst", 1)
    if s.max_concurrent_calls is not None:
        _whole(s, "max_concurrent_calls", 1)


def _whole(s: Settings, name: str, minimum: int) -> None:
    value = getattr(s, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SettingError(name, f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_upstreams(s: Settings) -> None:
    for what in ("mcp_config", "upstream_log_dir", "toolset"):
        value = getattr(s, what)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise SettingError(what, f"{what} must not be empty")
    for what in ("upstreams", "strict_upstreams"):
        if not isinstance(getattr(s, what), bool):
            raise SettingError(what, f"{what} must be true or false, got {getattr(s, what)!r}")
    _whole(s, "upstream_max_message_bytes", 1024)
    if s.tool_mode not in TOOL_MODES:
        raise SettingError("tool_mode", f"tool_mode must be one of: {', '.join(TOOL_MODES)}, got {s.tool_mode!r}")


CHECKS: tuple[Callable[[Settings], None], ...] = (
    _check_identity,
    _check_filters,
    _check_network,
    _check_protocol,
    _check_service,
    _check_limits,
    _check_replicas,
    _check_traffic,
    check_auth,  # kept apart (auth_settings.py): the auth rules are many
    _check_upstreams,
    check_needs,  # last: each rule reads settings the checks above normalised
)

RESERVED_PATHS = ("/mcp", "/sse", "/messages", "/health", "/ready", "/metrics", "/openai", "/.well-known")


def _check_prefix(prefix: str) -> str:
    """``/explorer`` and ``/explorer/`` alike become ``/explorer``; it must not shadow a route."""
    if not isinstance(prefix, str) or not prefix.startswith("/"):
        raise SettingError("explorer_prefix", f"explorer_prefix must start with '/', got {prefix!r}")
    normalized = prefix.rstrip("/")
    if not normalized or any(normalized == path or normalized.startswith(path + "/") for path in RESERVED_PATHS):
        raise SettingError("explorer_prefix", f"explorer_prefix {prefix!r} would shadow another route")
    return normalized
