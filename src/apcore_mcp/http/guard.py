"""Request heads checked before any route sees them: size, duplicated MCP headers, Host and Origin.

DNS-rebinding protection: the MCP SDK checks Host/Origin only on its own transports, and only
when given settings; this guard is pure ASGI middleware in front of the whole app, so
``/health``, the explorer and everything else are covered too, on ``0.0.0.0`` as on loopback.
Its rule is the one rule: a Host or Origin it accepts is passed on normalized (lower case, no
trailing slash), so the SDK's own exact comparisons on ``/mcp`` agree with it.

It also answers 431 for headers over ``max_header_bytes`` (uvicorn bounds none: our protocol,
``run.protocol``, refuses them before parsing; this is the check under plain uvicorn), and 400
for an MCP routing header sent twice (the SDK reads the first copy and, on the handshake path,
answers the wrong problem, such as "Missing session ID").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp._addresses import LOOPBACK_NAMES, WILDCARD_HOSTS
from apcore_mcp.http.body import refuse, send_json
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)

_WILDCARD_BINDS = WILDCARD_HOSTS | {""}
_SINGLE_HEADERS = {
    name.lower().encode(): name
    for name in ("Host", "Origin", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")
}
"""Headers a request may carry once: readers taking the first copy and the last would disagree
(the SDK reads the first; this guard checks the one Host and Origin there are)."""
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _split_host(value: str, *, pattern: bool = False) -> tuple[str, str | None] | None:
    """``("name", "port")`` from ``name``, ``name:port`` or ``[v6]:port`` (lower-cased); ``None`` if malformed.

    A port is digits (possibly none, as RFC 3986 allows); a ``pattern`` (an allow-list entry)
    may also have ``*`` for a port, or be a bare IPv6 address.
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[: end + 1], value[end + 1 :]
        if end == -1 or (rest and not rest.startswith(":")):
            return None  # "[::1" or "[::1]x"
        port = rest[1:] if rest else None
    elif value.count(":") > 1:
        return (f"[{value}]", None) if pattern else None  # a bare IPv6 address
    else:
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
    if port is not None and not (port == "" or (port.isascii() and port.isdigit()) or (pattern and port == "*")):
        return None
    return name, port


@dataclass(frozen=True)
class HostPattern:
    """``name`` (any port), ``name:*`` (any port) or ``name:port`` (that port only)."""

    name: str
    port: str | None

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        """The pattern of an allow-list entry; a malformed one (``host:abc``) matches no request."""
        name, port = _split_host(text, pattern=True) or (text.strip().lower(), "")
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
        split = _split_host(host) if host else None
        return split is not None and any(pattern.matches(*split) for pattern in self._host_patterns)

    def origin_allowed(self, origin: str | None) -> bool:
        """An absent Origin (not a browser) passes; a present one must be an allowed site.

        A site is ``scheme://host[:port]`` and nothing else (no path, query, user or stray
        character after an IPv6 address's bracket); a trailing slash is forgiven.
        """
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.origins:
            return True
        scheme, separator, authority = origin.partition("://")
        split = _split_host(authority) if separator and scheme in ("http", "https") else None
        if split is None:
            return False
        name, port = split
        if port and f"{scheme}://{name}:*" in self.origins:
            return True
        return self.host_allowed(authority)

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
    """Pure ASGI middleware: each request's head checked, in this order, before anything reads it.

    431 for headers over ``max_header_bytes``; 400 for a header sent twice that may come once
    (Host, Origin, the MCP routing headers); 421 for a Host not allowed; 403 for an Origin not allowed.

    ``any_origin`` names the paths whose ``GET``/``HEAD``/``OPTIONS`` any Origin may send: public,
    read-only documents served with CORS ``*`` (the server cards); their Host is checked all the same,
    which is what stops DNS rebinding.

    An accepted request goes on with its ``Host`` and ``Origin`` normalized (lower case, no
    trailing slash): names are case-insensitive, and the SDK's own (second) check on ``/mcp``
    compares them exactly. ``max_header_bytes`` counts the request line and the header lines
    as HTTP/1.1 sends them (``name: value`` and a line break each); ``None`` checks no size.
    """

    def __init__(
        self,
        app: ASGIApp,
        policy: HostPolicy,
        on_reject: Callable[[str], None] | None = None,
        *,
        max_header_bytes: int | None = None,
        any_origin: Callable[[str], bool] | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.on_reject = on_reject
        self.max_header_bytes = max_header_bytes
        self.any_origin = any_origin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        size = _request_line_size(scope)
        single: dict[bytes, bytes] = {}
        duplicated = None
        for key, value in scope["headers"]:
            size += len(key) + len(value) + 4
            if key in _SINGLE_HEADERS:
                if key in single and duplicated is None:
                    duplicated = _SINGLE_HEADERS[key]
                single[key] = value
        if self.max_header_bytes is not None and size > self.max_header_bytes:
            logger.warning("Rejected request with %d bytes of headers", size)
            message = f"Request headers exceed {self.max_header_bytes} bytes"
            await self._reject(send, scope, "headers_too_large", 431, message)
            return
        if duplicated is not None:
            await self._duplicated(scope, send, duplicated)
            return
        host, origin = (single[key].decode("latin-1") if key in single else None for key in (b"host", b"origin"))
        if not self.policy.host_allowed(host):
            logger.warning("Rejected request with Host %r", host)
            await self._reject(send, scope, "host", 421, "Invalid Host header")
            return
        if not self.policy.origin_allowed(origin) and not self._open_to_any_origin(scope):
            logger.warning("Rejected request with Origin %r", origin)
            await self._reject(send, scope, "origin", 403, "Invalid Origin header")
            return
        _normalize(scope, host, origin)
        await self.app(scope, receive, send)

    def _open_to_any_origin(self, scope: Scope) -> bool:
        return self.any_origin is not None and scope.get("method") in _READ_METHODS and self.any_origin(scope["path"])

    async def _reject(self, send: Send, scope: Scope, reason: str, status: int, message: str) -> None:
        if self.on_reject is not None:
            self.on_reject(reason)
        await _refuse(send, scope, status, message)

    async def _duplicated(self, scope: Scope, send: Send, header: str) -> None:
        logger.warning("Rejected request with more than one %s header", header)
        if self.on_reject is not None:
            self.on_reject("bad_request")
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        # The SDK's code for this on the 2026-07-28 path; the general one for handshake-era clients.
        version = next((value for key, value in scope["headers"] if key == b"mcp-protocol-version"), None)
        modern = version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
        code = HEADER_MISMATCH if modern else INVALID_REQUEST
        await refuse(send, scope, 400, f"{header} header appears more than once", code=code)


def _request_line_size(scope: Scope) -> int:
    """``METHOD target HTTP/x.y`` and its line break, as the client sent it (near enough)."""
    target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string") or b"")
    return len(scope.get("method", "GET")) + target + len(scope.get("http_version", "1.1")) + 9


def _normalize(scope: Scope, host: str | None, origin: str | None) -> None:
    """Lower-case Host and Origin, without a trailing slash, in place when they are not already."""
    clean_origin = origin.rstrip("/").lower() if origin is not None else None
    if (host is None or host == host.lower()) and origin == clean_origin:
        return
    # In place, not a copy: the metrics middleware outside reads the matched route from this scope.
    replaced = {b"host": (host or "").lower(), b"origin": clean_origin or ""}
    scope["headers"] = [
        (key, replaced[key].encode("latin-1") if key in replaced else value) for key, value in scope["headers"]
    ]


async def _refuse(send: Send, scope: Scope, status: int, message: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send_json(send, status, {"error": message})
