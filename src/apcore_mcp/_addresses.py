"""Network addresses: whether a host is the loopback. Imported by the settings and the limits alike."""

from __future__ import annotations

from ipaddress import ip_address


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
