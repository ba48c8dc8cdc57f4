"""Network addresses: the one list of loopback names, and whether a host is the loopback.
Imported by the settings, the Host guard and the limits alike."""

from __future__ import annotations

from ipaddress import ip_address

LOOPBACK_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
"""The names a local server answers to, as a Host header carries them: DNS-rebinding protection
starts from these (``http/guard.py``), and each is a loopback address (``is_loopback_address``)."""
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]"})
"""Binding to these listens on every interface."""


def is_loopback_address(host: str) -> bool:
    """True for loopback IP addresses (IPv4-mapped too) and the name ``localhost``."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)
