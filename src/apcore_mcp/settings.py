"""Server settings: one frozen, validated object shared by ``serve()``, the CLI and the app factory."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Transport = Literal["stdio", "streamable-http", "sse"]
TRANSPORTS: tuple[str, ...] = ("stdio", "streamable-http", "sse")
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
MAX_NAME_LENGTH = 255


def normalize_transport(transport: str) -> str:
    """Lower-case ``transport`` and check it is one we serve."""
    value = transport.lower() if isinstance(transport, str) else transport
    if value not in TRANSPORTS:
        raise ValueError(f"Unknown transport: {transport!r}. Must be one of: {', '.join(TRANSPORTS)}")
    return str(value)


def normalize_log_level(level: str) -> str:
    value = level.upper() if isinstance(level, str) else level
    if value not in LOG_LEVELS:
        raise ValueError(f"Unknown log level: {level!r}. Must be one of: {', '.join(LOG_LEVELS)}")
    return str(value)


def _as_tuple(values: Sequence[str] | str | None, what: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        raise TypeError(f"{what} must be a list of strings, not a single string")
    return tuple(values)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How a server presents and protects itself. Every field is checked on construction.

    ``allowed_hosts`` / ``allowed_origins`` extend the Host and Origin allow-lists that
    DNS-rebinding protection starts from (the loopback names, plus ``host`` when it is a
    specific address). Entries are ``name``, ``name:port`` or ``name:*``; a name without a
    port matches any port.
    """

    name: str = "apcore-mcp"
    version: str | None = None
    tags: tuple[str, ...] | None = None
    prefix: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    dynamic: bool = False
    stateless: bool = False
    json_response: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    log_level: str | None = None
    shutdown_timeout: float = 3.0
    metrics: bool = True
    explorer: bool = False
    explorer_prefix: str = "/explorer"
    allow_execute: bool = False
    execute_token: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("name must not be empty")
        if len(self.name) > MAX_NAME_LENGTH:
            raise ValueError(f"name must not exceed {MAX_NAME_LENGTH} characters")
        if self.version is not None and (not isinstance(self.version, str) or not self.version):
            raise ValueError("version must not be empty")
        if self.tags is not None:
            tags = _as_tuple(self.tags, "tags")
            if any(not isinstance(tag, str) or not tag for tag in tags):
                raise ValueError("Tag values must not be empty")
            object.__setattr__(self, "tags", tags or None)
        if self.prefix is not None and (not isinstance(self.prefix, str) or not self.prefix):
            raise ValueError("prefix must not be empty")
        if not isinstance(self.host, str) or not self.host.strip():
            raise ValueError("Host must not be empty")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise ValueError(f"Port must be between 1 and 65535, got {self.port}")
        if self.log_level is not None:
            object.__setattr__(self, "log_level", normalize_log_level(self.log_level))
        for what in ("allowed_hosts", "allowed_origins"):
            entries = _as_tuple(getattr(self, what), what)
            if any(not isinstance(entry, str) or not entry.strip() for entry in entries):
                raise ValueError(f"{what} entries must not be empty")
            object.__setattr__(self, what, tuple(entry.strip() for entry in entries))
        if not self.shutdown_timeout >= 0:
            raise ValueError(f"shutdown_timeout must be >= 0, got {self.shutdown_timeout}")
        object.__setattr__(self, "explorer_prefix", _check_prefix(self.explorer_prefix))
        if self.execute_token is not None and len(self.execute_token) < 16:
            raise ValueError("execute_token must be at least 16 characters")

    @property
    def is_loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")

    def server_version(self) -> str:
        from apcore_mcp import __version__

        return self.version or __version__


RESERVED_PATHS = ("/mcp", "/sse", "/messages", "/health", "/ready", "/metrics", "/openai")


def _check_prefix(prefix: str) -> str:
    """``/explorer`` and ``/explorer/`` alike become ``/explorer``; it must not shadow a route."""
    if not isinstance(prefix, str) or not prefix.startswith("/"):
        raise ValueError(f"explorer_prefix must start with '/', got {prefix!r}")
    normalized = prefix.rstrip("/")
    if not normalized or any(normalized == path or normalized.startswith(path + "/") for path in RESERVED_PATHS):
        raise ValueError(f"explorer_prefix {prefix!r} would shadow another route")
    return normalized


def configure_logging(level: str | None) -> None:
    """Apply ``log_level``: a stderr handler via ``basicConfig`` and the ``apcore_mcp`` level.

    ``None`` leaves logging untouched: as a library we install nothing by default.
    """
    if level is None:
        return
    numeric = getattr(logging, normalize_log_level(level))
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apcore_mcp").setLevel(numeric)
