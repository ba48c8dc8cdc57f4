"""A listening socket of its own for each worker on one port (``SO_REUSEPORT``): the kernel spreads
new connections over the workers.

With one listening socket shared by every worker, whichever worker wakes first accepts every
connection waiting (asyncio accepts them all in one go), so a client pool opening its keep-alive
connections at once lands on one worker and the others idle. With ``SO_REUSEPORT`` each worker
listens on a socket of its own bound to the same address, and Linux hashes each new connection
to one of them. The supervisor holds the port, bound but not listening, so no other program takes
it between two workers' starts and no connection waits on a socket nobody accepts from.

uvicorn's supervisor hands its workers the sockets to serve, pickled into each new worker; what
it is handed here is a ``WorkerListener``, which unpickles in the worker as a socket bound there.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

BACKLOG = 2048


def spreads_connections() -> bool:
    """Whether this platform balances new connections over ``SO_REUSEPORT`` listeners (Linux does)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def holding_socket(host: str, port: int) -> socket.socket:
    """The supervisor's socket: ``host:port`` bound with ``SO_REUSEPORT``, not listening.

    Raises:
        OSError: the address cannot be bound (in use, not permitted, unknown host).
    """
    family, address = _address(host, port)
    sock = _bound(family, address)
    return sock


class WorkerListener:
    """Stands for a worker's own listening socket on ``address`` until it reaches the worker."""

    def __init__(self, held: socket.socket) -> None:
        self.family = held.family
        self.address = held.getsockname()

    def __reduce__(self) -> tuple[Any, ...]:
        return (worker_socket, (self.family, self.address))


def worker_socket(family: socket.AddressFamily, address: Any) -> socket.socket:
    """A listening socket of this worker on ``address``, beside its sibling workers'."""
    sock = _bound(family, address)
    sock.listen(BACKLOG)
    return sock


def _address(host: str, port: int) -> tuple[socket.AddressFamily, Any]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _kind, _proto, _name, address = infos[0]
    return family, address


def _bound(family: socket.AddressFamily, address: Any) -> socket.socket:
    # IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on such sockets' connections.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock
