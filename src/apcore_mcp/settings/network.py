"""Where the HTTP transports listen and whom they accept: host, port, allowed Hosts and Origins, trusted proxies."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from apcore_mcp._addresses import LOOPBACK_NAMES, WILDCARD_HOSTS, is_loopback_address
from apcore_mcp.settings.option import SettingError, as_tuple, option, set_field

LOOPBACK_HOSTS = frozenset({*LOOPBACK_NAMES, *(name.strip("[]") for name in LOOPBACK_NAMES)})
"""The loopback names, IPv6 with and without brackets (from the one list in ``_addresses``)."""
__all__ = ["LOOPBACK_HOSTS", "WILDCARD_HOSTS", "NetworkSettings", "check_network", "is_loopback_host"]


@dataclass(frozen=True, kw_only=True)
class NetworkSettings:
    """``allowed_hosts`` / ``allowed_origins`` extend the Host and Origin allow-lists that
    DNS-rebinding protection starts from (the loopback names, plus ``host`` when it is a
    specific address). Entries are ``name``, ``name:port`` or ``name:*``; a name without a
    port matches any port.
    """

    host: str = option(
        "127.0.0.1",
        "address the HTTP transports bind to (an allowed Host; bound off loopback, explorer calls need a token)",
        group="network",
    )
    port: int = option(
        8000, "port the HTTP transports bind to (0: any free port, chosen at start)", group="network", kind="int"
    )
    allowed_hosts: tuple[str, ...] = option(
        (),
        "extra Host values accepted: `name` (any port), `name:port`, `name:*`",
        group="network",
        kind="list",
        metavar="HOST[:PORT]",
    )
    allowed_origins: tuple[str, ...] = option(
        (),
        "extra browser origins accepted, e.g. `https://app.example.com`",
        group="network",
        kind="list",
        metavar="URL",
    )
    forwarded_allow_ips: tuple[str, ...] = option(
        (),
        "proxies (IP addresses or CIDR networks) trusted to name the client in `X-Forwarded-For`/`Forwarded`; "
        "from any other peer those headers are ignored",
        group="network",
        kind="list",
        metavar="IP[,CIDR]",
        default_text="none: the socket peer is the client",
    )

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def is_wildcard(self) -> bool:
        """Bound to every interface (``0.0.0.0``, ``::``)."""
        return self.host.lower() in WILDCARD_HOSTS


def is_loopback_host(host: str) -> bool:
    """A loopback IP address or ``localhost``; a DNS name such as ``127.example.com`` is not."""
    return is_loopback_address(host)


def check_network(s: NetworkSettings) -> None:
    if not isinstance(s.host, str) or not s.host.strip():
        raise SettingError("host", "Host must not be empty")
    if isinstance(s.port, bool) or not isinstance(s.port, int) or not 0 <= s.port <= 65535:
        raise SettingError("port", f"Port must be between 0 (any free port) and 65535, got {s.port}")
    for what in ("allowed_hosts", "allowed_origins"):
        entries = as_tuple(getattr(s, what), what)
        if any(not isinstance(entry, str) or not entry.strip() for entry in entries):
            raise SettingError(what, f"{what} entries must not be empty")
        set_field(s, what, tuple(entry.strip() for entry in entries))
    proxies = as_tuple(s.forwarded_allow_ips, "forwarded_allow_ips")
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
