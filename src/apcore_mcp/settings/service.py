"""What the server serves beside MCP, what it runs on, and how it stops: metrics, the explorer (and its
calls), the HTTP parser and event loop, shutdown."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from apcore_mcp.settings.option import SettingError, option, set_field

HTTP_PARSERS: tuple[str, ...] = ("auto", "httptools", "h11")
EVENT_LOOPS: tuple[str, ...] = ("auto", "uvloop", "asyncio")
SPEED_EXTRA = "pip install 'apcore-mcp[speed]'"
RESERVED_PATHS = ("/mcp", "/sse", "/messages", "/health", "/ready", "/metrics", "/openai", "/.well-known")


@dataclass(frozen=True, kw_only=True)
class ServiceSettings:
    metrics: bool = option(True, "serve `/metrics` (Prometheus)", group="service", kind="bool")
    explorer: bool = option(False, "serve the browser explorer", group="service", kind="bool")
    explorer_prefix: str = option("/explorer", "URL prefix of the explorer", group="service")
    allow_execute: bool = option(
        False, "let the explorer call tools (a token is needed off loopback)", group="service", kind="bool"
    )
    execute_token: str | None = option(
        None,
        "bearer token for explorer calls (16+ characters); when unset and the host is not loopback, "
        "a random one is made and written to a file only its owner reads (the log names the file)",
        group="service",
        secret=True,
    )
    admin_routes: bool = option(
        False,
        "with auth off, serve the operator routes (`/admin/tools`) to loopback clients; with auth on they"
        " are always served, to tokens holding `auth_admin_scope`",
        group="service",
        kind="bool",
    )
    server_card: bool = option(
        True,
        "serve each MCP endpoint's server card (`/mcp/server-card`, SEP-2127 draft) and the domain catalog "
        "(`/.well-known/mcp/catalog.json`); open to anyone, they name no tool",
        group="service",
        kind="bool",
    )
    http_parser: str = option(
        "auto",
        "HTTP/1.1 parser: `httptools` (faster; the `speed` extra), `h11`, or `auto` (httptools when installed); "
        "the header deadline and size bound hold on both",
        group="service",
        kind="choice",
        choices=HTTP_PARSERS,
    )
    event_loop: str = option(
        # Measured (docs/performance.md): uvloop serves a call no cheaper than asyncio here, and from
        # a server's second wave of 200 connections one request in ten waits about a second on it.
        "asyncio",
        "event loop of the HTTP server: `asyncio`, `uvloop` (the `speed` extra; no faster for this "
        "server, and a seconds-long p99 from 200 connections on), or `auto` (uvloop when installed)",
        group="service",
        kind="choice",
        choices=EVENT_LOOPS,
    )
    shutdown_timeout: float = option(
        3.0, "seconds calls in flight get to finish on shutdown", group="service", kind="float"
    )


def check_service(s: ServiceSettings) -> None:
    if isinstance(s.shutdown_timeout, bool) or not isinstance(s.shutdown_timeout, int | float):
        raise SettingError("shutdown_timeout", f"shutdown_timeout must be a number, got {s.shutdown_timeout!r}")
    if not s.shutdown_timeout >= 0:
        raise SettingError("shutdown_timeout", f"shutdown_timeout must be >= 0, got {s.shutdown_timeout}")
    set_field(s, "explorer_prefix", _check_prefix(s.explorer_prefix))
    _check_speed(s, "http_parser", HTTP_PARSERS, "httptools")
    _check_speed(s, "event_loop", EVENT_LOOPS, "uvloop")
    if s.execute_token is not None and len(s.execute_token) < 16:
        raise SettingError("execute_token", "execute_token must be at least 16 characters")


def _check_prefix(prefix: str) -> str:
    """``/explorer`` and ``/explorer/`` alike become ``/explorer``; it must not shadow a route."""
    if not isinstance(prefix, str) or not prefix.startswith("/"):
        raise SettingError("explorer_prefix", f"explorer_prefix must start with '/', got {prefix!r}")
    normalized = prefix.rstrip("/")
    if not normalized or any(normalized == path or normalized.startswith(path + "/") for path in RESERVED_PATHS):
        raise SettingError("explorer_prefix", f"explorer_prefix {prefix!r} would shadow another route")
    return normalized


def _check_speed(s: ServiceSettings, name: str, choices: tuple[str, ...], package: str) -> None:
    """One of ``choices``; naming ``package`` needs it installed (``auto`` falls back without it)."""
    value = getattr(s, name)
    if value not in choices:
        raise SettingError(name, f"{name} must be one of: {', '.join(choices)}, got {value!r}")
    if value == package and importlib.util.find_spec(package) is None:
        raise SettingError(name, f"{name}={package} needs {package}, which is not installed ({SPEED_EXTRA})")
