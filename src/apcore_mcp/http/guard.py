"""DNS-rebinding protection for every HTTP route: Host and Origin checked against allow-lists.

The MCP SDK checks Host/Origin only on its own transports, and only when given settings;
this guard is pure ASGI middleware in front of the whole app, so ``/health``, the explorer
and everything else are covered too, on ``0.0.0.0`` as on loopback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.http.body import send_json
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = frozenset({"0.0.0.0", "::", "[::]", ""})


def _split_host(value: str) -> tuple[str, str | None]:
    """``("name", "port")`` from ``name``, ``name:port`` or ``[v6]:port`` (lower-cased)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        name, rest = value[: end + 1], value[end + 1 :]
        return name, rest[1:] if rest.startswith(":") else None
    if value.count(":") == 1:
        name, port = value.split(":")
        return name, port
    if value.count(":") > 1:  # a bare IPv6 address
        return f"[{value}]", None
    return value, None


@dataclass(frozen=True)
class HostPattern:
    """``name`` (any port), ``name:*`` (any port) or ``name:port`` (that port only)."""

    name: str
    port: str | None

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        name, port = _split_host(text)
        return cls(name, None if port in (None, "*") else port)

    def matches(self, name: str, port: str | None) -> bool:
        return name == self.name and (self.port is None or port == self.port)


class HostPolicy:
    """Which Host and Origin header values a server accepts."""

    def __init__(self, hosts: Iterable[str], origins: Iterable[str] = ()) -> None:
        self.hosts = tuple(dict.fromkeys(hosts))
        self.origins = tuple(dict.fromkeys(origin.rstrip("/").lower() for origin in origins))
        self._host_patterns = tuple(HostPattern.parse(host) for host in self.hosts)

    @classmethod
    def for_settings(cls, settings: Settings) -> HostPolicy:
        """Loopback names, the bound host when it is a specific address, then the allow-lists."""
        hosts = list(LOOPBACK_NAMES)
        if settings.host.lower() not in _WILDCARD_BINDS:
            hosts.append(settings.host if ":" not in settings.host else f"[{settings.host.strip('[]')}]")
        hosts.extend(settings.allowed_hosts)
        return cls(hosts, settings.allowed_origins)

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        name, port = _split_host(host)
        return any(pattern.matches(name, port) for pattern in self._host_patterns)

    def origin_allowed(self, origin: str | None) -> bool:
        """An absent Origin (not a browser) passes; a present one must be an allowed site."""
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:  # e.g. "http://[" (an unclosed IPv6 bracket)
            return False
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            return False
        if any(allowed.endswith(":*") and origin.startswith(allowed[:-1]) for allowed in self.origins):
            return True
        return self.host_allowed(parts.netloc)

    def to_sdk_settings(self) -> TransportSecuritySettings:
        """The same policy in the SDK's terms, for its transports' own (second) check."""
        hosts: list[str] = []
        origins: list[str] = list(self.origins)
        for pattern in self._host_patterns:
            if pattern.port is None:
                hosts += [pattern.name, f"{pattern.name}:*"]
                origins += [f"{scheme}://{pattern.name}{port}" for scheme in ("http", "https") for port in ("", ":*")]
            else:
                hosts.append(f"{pattern.name}:{pattern.port}")
                origins += [f"{scheme}://{pattern.name}:{pattern.port}" for scheme in ("http", "https")]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )


class HostOriginGuard:
    """Pure ASGI middleware: 421 for a Host not allowed, 403 for an Origin not allowed.

    An accepted request goes on with its ``Host`` and ``Origin`` lower-cased: names are
    case-insensitive, and the SDK's own (second) check on ``/mcp`` compares them exactly.
    """

    def __init__(self, app: ASGIApp, policy: HostPolicy, on_reject: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.policy = policy
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        mixed_case = False
        for key, value in scope["headers"]:
            if key == b"host":
                host = value.decode("latin-1")
                mixed_case |= value != value.lower()
            elif key == b"origin":
                origin = value.decode("latin-1")
                mixed_case |= value != value.lower()
        if not self.policy.host_allowed(host):
            logger.warning("Rejected request with Host %r", host)
            await self._reject(send, scope, "host", 421, "Invalid Host header")
            return
        if not self.policy.origin_allowed(origin):
            logger.warning("Rejected request with Origin %r", origin)
            await self._reject(send, scope, "origin", 403, "Invalid Origin header")
            return
        if mixed_case:
            # In place, not a copy: the metrics middleware outside reads the matched route from this scope.
            scope["headers"] = [
                (key, value.lower() if key in (b"host", b"origin") else value) for key, value in scope["headers"]
            ]
        await self.app(scope, receive, send)

    async def _reject(self, send: Send, scope: Scope, reason: str, status: int, message: str) -> None:
        if self.on_reject is not None:
            self.on_reject(reason)
        await _refuse(send, scope, status, message)


async def _refuse(send: Send, scope: Scope, status: int, message: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send_json(send, status, {"error": message})
