"""Where the server really listens, and whether that exposes it to other machines.

Settings carry a ``host``, but ``uvicorn app:create_app --factory --host 0.0.0.0`` binds
where uvicorn is told, whatever the setting says. So the app asks the server: our own
``HttpServer`` hands over its sockets (``LISTEN_STATE`` on the app state); under the uvicorn
command line the running ``uvicorn.Server`` is found through its signal handler. Each
request's local address (``scope["server"]``) is checked too: a connection that arrived over
a non-loopback interface proves the server reachable, whatever else is known.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import uvicorn

from apcore_mcp._addresses import is_loopback_address
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)

LISTEN_STATE = "listen_hosts"
"""``app.state`` attribute: a callable giving the addresses the server's sockets are bound to."""


def running_uvicorn() -> uvicorn.Server | None:
    """The ``uvicorn.Server`` running this process's main loop, found through its SIGTERM handler."""
    try:
        handler = signal.getsignal(signal.SIGTERM)
    except ValueError:  # not the main thread
        return None
    server = getattr(handler, "__self__", None)
    return server if isinstance(server, uvicorn.Server) else None


def uvicorn_hosts(server: uvicorn.Server) -> list[str] | None:
    """The addresses a uvicorn server listens on: its sockets once bound, else its ``--host``."""
    listeners = getattr(server, "servers", [])  # set once uvicorn has bound, after the app's lifespan started
    bound = [sock.getsockname()[0] for listener in listeners for sock in (listener.sockets or ())]
    if bound:
        return bound
    config = server.config
    if config.fd is not None or config.uds:
        return None  # a descriptor or a Unix socket from elsewhere: unknown
    return [str(config.host)]


def listen_hosts(state: object) -> list[str] | None:
    """The addresses this app is served on, or ``None`` when no server can tell."""
    given: Callable[[], Sequence[str]] | None = getattr(state, LISTEN_STATE, None)
    if callable(given):
        return list(given())
    server = running_uvicorn()
    return uvicorn_hosts(server) if server is not None else None


def exposed(settings: Settings, hosts: Iterable[str] | None) -> bool:
    """Reachable from other machines: the configured host or any bound address is not loopback."""
    addresses = [settings.host, *(hosts or ())]
    return any(not is_loopback_address(address) for address in addresses)


def local_connection(scope: Mapping[str, Any]) -> bool:
    """The request reached a loopback address of this machine (ASGI ``scope["server"]``)."""
    server = scope.get("server")
    return isinstance(server, tuple | list) and bool(server) and is_loopback_address(str(server[0]))


def exposure_warning(settings: Settings, hosts: Sequence[str], tool_count: int, *, authenticated: bool = False) -> str:
    """What a non-loopback bind makes reachable, in one line."""
    guarded = "for authenticated callers" if authenticated else "with no authentication"
    open_parts = [f"/mcp and /sse run {tool_count} tool(s) {guarded}"]
    if settings.explorer and settings.allow_execute:
        open_parts.append(f"the explorer at {settings.explorer_prefix}/ runs tools (bearer token required)")
    elif settings.explorer:
        open_parts.append(f"the explorer at {settings.explorer_prefix}/ lists the tools")
    if settings.metrics:
        open_parts.append("/metrics is public")
    if settings.rate_limit is None:
        open_parts.append("tool calls have no rate limit")
    where = ", ".join(sorted(set(hosts))) or settings.host
    return (
        f"Listening on {where}, reachable from other machines: {'; '.join(open_parts)}. "
        "Bind 127.0.0.1 or put an authenticating proxy in front."
    )


def warn_if_exposed(settings: Settings, state: object, tool_count: int, *, authenticated: bool = False) -> bool:
    """Log the exposure WARNING when the server is reachable from other machines; return whether it is."""
    hosts = listen_hosts(state)
    if not exposed(settings, hosts):
        return False
    logger.warning(exposure_warning(settings, hosts or [settings.host], tool_count, authenticated=authenticated))
    return True
