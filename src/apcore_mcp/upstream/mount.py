"""Mounting the servers of ``settings.mcp_config`` (and ``from_openapi``) for a serving process, and reloading them.

``mount_upstreams(registry, settings, environ)`` is the one entry point the run layer needs:
an async context manager that loads the file, opens the pool, mounts the servers the served
toolsets use (the main one plus every toolset of the file, each with its own endpoint) and stops
them all on exit. ``reload_upstreams`` is a toolset switch from the file as it is now (SIGHUP,
or ``watch_config`` noticing a change); a file that no longer parses changes nothing.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from apcore_mcp.calls.held import HeldTools
from apcore_mcp.settings import Settings
from apcore_mcp.settings.upstreams import mounts_upstreams
from apcore_mcp.upstream.config.parse import DEFAULT_TOOLSET, UpstreamConfig, UpstreamConfigError, load_config
from apcore_mcp.upstream.errors import UpstreamError
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.pins.keeper import PinKeeper
from apcore_mcp.upstream.pins.store import default_pins_path
from apcore_mcp.upstream.skills import SkillShelf
from apcore_mcp.upstream.toolsets import Switch, UpstreamRuntime

logger = logging.getLogger(__name__)


class UpstreamStartError(RuntimeError):
    """Strict mode: a server of the config could not be mounted."""


def config_of(settings: Settings, environ: Mapping[str, str]) -> UpstreamConfig:
    """The servers ``settings`` name: its ``mcp_config`` file and its ``from_openapi`` documents.

    Raises:
        UpstreamConfigError: the file is unusable (or, strict, names a missing variable).
    """
    return load_config(settings.mcp_config, environ, strict=settings.strict_upstreams, openapi=settings.from_openapi)


def served_toolsets(config: UpstreamConfig, main: str | None) -> list[str]:
    """The main endpoint's toolset first, then every toolset of the file (each has an endpoint)."""
    first = main or DEFAULT_TOOLSET
    return [first, *(name for name in config.toolsets if name != first)]


def pins_path(settings: Settings) -> Path | None:
    """The pins file: ``settings.pins``, else ``<config stem>.pins.json`` beside ``mcp_config`` (``None``: neither)."""
    return Path(settings.pins) if settings.pins is not None else default_pins_path(settings.mcp_config)


def keeper_of(settings: Settings) -> PinKeeper | None:
    """The pins a serving process holds its upstream tools to; read-only under several workers.

    Raises:
        PinsFileError: the pins file exists and is unusable.
    """
    path = pins_path(settings)
    if path is None:
        logger.warning("Upstream tools are not pinned: no mcp_config file to put the pins beside (set --pins FILE)")
        return None
    # Several workers would race to write one file: pins are then taken with `apcore-mcp pins approve`.
    return PinKeeper(path, writable=settings.workers <= 1, accept_new=settings.pins_accept_new)


def _warn_without_auth(config: UpstreamConfig, settings: Settings) -> None:
    """Token exchange needs the caller's validated token: without authentication every call is refused."""
    if settings.auth != "none":
        return
    for name, spec in config.servers.items():
        if spec.token_exchange is not None:
            logger.warning(
                "Upstream %r calls as the caller (auth: token exchange) but authentication is off: "
                "every call to it will be refused (set --auth)",
                name,
            )


@asynccontextmanager
async def mount_upstreams(
    registry: Any,
    settings: Settings,
    environ: Mapping[str, str],
    *,
    config: UpstreamConfig | None = None,
    skills: SkillShelf | None = None,
    held: HeldTools | None = None,
) -> AsyncIterator[UpstreamRuntime | None]:
    """The mounted servers of ``settings`` (``None`` when it names none); ``config``: already read;
    ``skills``: where the servers' skills are relayed to (``None``: they are not fetched);
    ``held``: told which tools the pins hold (``calls/held.py``).

    Raises:
        UpstreamConfigError: the file is unusable (or, strict, names a missing variable).
        UpstreamsDisabled: upstreams are off and a served toolset names servers.
        UpstreamStartError: strict, and a server could not be started.
        KeyError: ``settings.toolset`` names no toolset of the file.
        PinsFileError: the pins file exists and is unusable.
    """
    if not mounts_upstreams(settings):
        yield None
        return
    if config is None:
        config = config_of(settings, environ)
    _warn_without_auth(config, settings)
    pins = keeper_of(settings)  # before any server starts: an unusable pins file stops here, plainly
    async with UpstreamPool(
        redactor=config.redactor,
        log_dir=settings.upstream_log_dir,
        max_message_bytes=settings.upstream_max_message_bytes,
    ) as pool:
        runtime = UpstreamRuntime(registry, pool, enabled=settings.upstreams, pins=pins, skills=skills, held=held)
        try:
            switch = await runtime.apply(config, served_toolsets(config, settings.toolset))
            if settings.strict_upstreams and switch.failed:
                names = ", ".join(sorted(switch.failed))
                raise UpstreamStartError(f"upstream server(s) not started (strict mode): {names}")
            yield runtime
        finally:
            with anyio.CancelScope(shield=True):
                await runtime.close()


def read_config(settings: Settings, environ: Mapping[str, str]) -> UpstreamConfig | None:
    """The config file as it is now; ``None`` (and an ERROR logged) when it is unusable."""
    if not mounts_upstreams(settings):
        return None
    try:
        return config_of(settings, environ)
    except UpstreamConfigError as exc:
        logger.error("Upstream config not reloaded, the running servers stay as they are: %s", exc)
        return None


async def reload_upstreams(
    runtime: UpstreamRuntime, settings: Settings, environ: Mapping[str, str], *, config: UpstreamConfig | None = None
) -> Switch | None:
    """Apply the config file as it is now (or ``config``); ``None`` (and an ERROR logged) when it is unusable."""
    if not mounts_upstreams(settings):
        return None
    try:
        if config is None:
            config = config_of(settings, environ)
        toolsets = served_toolsets(config, settings.toolset)
        runtime.pool.redactor.add(config.redactor.secrets)
        return await runtime.apply(config, toolsets)
    except (UpstreamConfigError, UpstreamError, KeyError) as exc:
        logger.error("Upstream config not reloaded, the running servers stay as they are: %s", exc)
        return None


def _fingerprint(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


async def watch_config(path: str | Path, on_change: Callable[[], Awaitable[Any]], *, interval: float = 2.0) -> None:
    """Call ``on_change()`` whenever the file's content changes; runs until cancelled.

    Polled (a hash every ``interval`` seconds): no file-watching dependency for one small file.
    """
    target = Path(path)
    last = _fingerprint(target)  # at once, before the first wait: a change right after start is seen
    while True:
        await anyio.sleep(interval)
        current = await anyio.to_thread.run_sync(_fingerprint, target)  # off the event loop
        if current is not None and current != last:
            last = current
            logger.info("Upstream config %s changed; reloading", target)
            await on_change()
