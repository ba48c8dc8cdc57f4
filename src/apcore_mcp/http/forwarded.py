"""The client's address behind trusted proxies: ``X-Forwarded-For`` and ``Forwarded`` (RFC 7239).

A request's client is the socket peer (ASGI ``scope["client"]``) unless that peer is one of
the proxies listed in ``forwarded_allow_ips``: only then are its forwarded headers believed,
and the client is the rightmost hop that is not itself a trusted proxy (each proxy appends the
address it received the request from, so everything left of the last untrusted hop could have
been written by the client). Per-caller limits (``limits.principal_key``) then count real
callers, whatever a client writes in those headers.

When a trusted peer sends ``X-Forwarded-For`` it is the one used (nginx and most proxies set it
and pass a client's ``Forwarded`` through untouched); ``Forwarded`` is read only when no
``X-Forwarded-For`` came. The scheme (``X-Forwarded-Proto``, or ``proto=`` of the hop taken
from ``Forwarded``) is taken from a trusted peer too: the explorer compares a page's
``Origin`` with it.

The app applies this itself, so it works under any server. uvicorn must not rewrite the
client first: the CLI runs it with ``proxy_headers=False`` and the documented ``uvicorn``
command passes ``--no-proxy-headers``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_HOPS = 32
"""Hops read from the right of a forwarded chain; a longer chain is cut to its last ones."""
_SCHEMES = frozenset({"http", "https"})
# RFC 7239: an obfuscated identifier (``_hidden``) or ``unknown`` stands for a hop without an address.
_OBFUSCATED = re.compile(r"^(unknown|_[A-Za-z0-9._-]{1,64})$")
_PAIR = re.compile(r'\s*([A-Za-z0-9!#$%&\'*+.^_`|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;,"\s]*)\s*')


def parse_network(entry: str) -> Network:
    """An IP address (a one-address network) or a CIDR network.

    Raises:
        ValueError: neither, or a network written with host bits set (``10.0.0.5/8``).
    """
    return ipaddress.ip_network(entry.strip())


class TrustedProxies:
    """The peers whose forwarded headers are believed: addresses and networks, IPv4 and IPv6."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.networks = tuple(parse_network(entry) for entry in entries)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def __contains__(self, host: object) -> bool:
        address = _address(host) if isinstance(host, str) else None
        if address is None:
            return False
        mapped = getattr(address, "ipv4_mapped", None)  # a dual-stack socket's IPv4 peer
        return any(candidate in net for net in self.networks for candidate in (address, mapped) if candidate)


@dataclass(frozen=True)
class Hop:
    """One entry of a forwarded chain: a host (an address, ``unknown`` or an obfuscated name) and a port."""

    host: str
    port: int = 0
    proto: str | None = None


def client_hop(peer: str, headers: Iterable[tuple[bytes, bytes]], trusted: TrustedProxies) -> Hop | None:
    """The client a trusted ``peer`` forwarded for, or ``None`` to keep the peer itself.

    ``None`` too when the peer is not trusted, sent no forwarded header, or one whose hops,
    read from the right, hold something malformed before the client is reached. Hops left of
    the client are never read: the client wrote them, and a malformed one there must not make
    it the proxy.
    """
    if peer not in trusted:
        return None
    xff: list[bytes] = []
    forwarded: list[bytes] = []
    proto: list[bytes] = []
    for name, value in headers:
        if name == b"x-forwarded-for":
            xff.append(value)
        elif name == b"forwarded":
            forwarded.append(value)
        elif name == b"x-forwarded-proto":
            proto.append(value)
    if xff:
        scheme = _proto(proto)  # one scheme for the chain: the one the proxy set
        items = b",".join(xff).decode("latin-1").split(",")[-MAX_HOPS:]
        hops = (_xff_hop(item, scheme) for item in reversed(items))
    elif forwarded:
        elements = _split_elements(b",".join(forwarded).decode("latin-1"))[-MAX_HOPS:]
        hops = (_forwarded_hop(element) for element in reversed(elements))
    else:
        return None
    hop = None
    for hop in hops:
        if hop is None or hop.host not in trusted:
            return hop
    return hop  # every hop is a trusted proxy: the first of them is the client


def _xff_hop(item: str, proto: str | None) -> Hop | None:
    hop = _hop(item.strip())
    return Hop(hop.host, hop.port, proto) if hop is not None else None


def _forwarded_hop(element: str) -> Hop | None:
    """The ``for=`` of one element of ``Forwarded`` (RFC 7239 section 4), with its ``proto=``."""
    params: dict[str, str] = {}
    for pair in element.split(";") if element.strip() else []:
        match = _PAIR.fullmatch(pair)
        if match is None:
            return None
        raw = match.group(2)
        params[match.group(1).lower()] = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
    if "for" not in params:
        return None  # an element without for= cannot be placed in the chain
    hop = _hop(params["for"])
    if hop is None:
        return None
    proto = params.get("proto", "").lower()
    return Hop(hop.host, hop.port, proto if proto in _SCHEMES else None)


def _split_elements(value: str) -> list[str]:
    """``Forwarded`` split on the commas outside quoted strings."""
    elements: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in value:
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            elements.append("".join(current))
            current = []
            continue
        current.append(char)
    elements.append("".join(current))
    return elements


def _hop(text: str) -> Hop | None:
    """``1.2.3.4``, ``1.2.3.4:80``, ``2001:db8::1``, ``[2001:db8::1]:80``, ``unknown``, ``_name``; else ``None``."""
    if _OBFUSCATED.match(text):
        return Hop(text)
    host, port = text, ""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    address = _address(host)
    if address is None or (port and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    return Hop(str(address), int(port) if port else 0)


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _proto(values: list[bytes]) -> str | None:
    if len(values) != 1:
        return None
    proto = values[0].decode("latin-1").strip().lower()
    return proto if proto in _SCHEMES else None


class ForwardedClient:
    """Pure ASGI middleware: a trusted proxy's forwarded client becomes ``scope["client"]``.

    The scope is changed in place (as uvicorn's own middleware does), so what runs outside
    this middleware sees the same client.
    """

    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted
        self._warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            self._apply(scope)
        await self.app(scope, receive, send)

    def _apply(self, scope: Scope) -> None:
        client = scope.get("client")
        if not client:
            return
        if client[1] == 0 and not self._warned:
            self._warn_if_rewritten(scope)
        hop = client_hop(str(client[0]), scope["headers"], self.trusted) if self.trusted else None
        if hop is None:
            return
        scope["client"] = (hop.host, hop.port)
        if hop.proto is not None and scope["type"] == "http":
            scope["scheme"] = hop.proto

    def _warn_if_rewritten(self, scope: Scope) -> None:
        # uvicorn's own proxy-headers middleware leaves port 0 when it names the client from
        # X-Forwarded-For: the socket peer is lost by then, and any loopback client can name itself.
        if any(name == b"x-forwarded-for" for name, _ in scope["headers"]):
            self._warned = True
            logger.warning(
                "The server in front rewrote the client address from X-Forwarded-For before the app saw it: "
                "run uvicorn with --no-proxy-headers and list trusted proxies in APCORE_MCP_FORWARDED_ALLOW_IPS"
            )
