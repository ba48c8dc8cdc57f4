"""Serving a bridge's upstream MCP servers: mount them, follow config changes, unmount on exit.

Part of a bridge's service (``BridgeService``), whichever runner hosts it. A reload (SIGHUP, or the file's
content changing) is a toolset switch: servers no longer used stop, new ones start, unchanged
ones keep running with their sessions; the main endpoint's selection and every toolset endpoint
follow, and their clients get ``list_changed`` when their list changed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any, Protocol

import anyio

from apcore_mcp.bridge.core import Bridge, main_toolset
from apcore_mcp.upstream.config.parse import UpstreamConfig
from apcore_mcp.upstream.mount import mount_upstreams, pins_path, read_config, reload_upstreams, watch_config
from apcore_mcp.upstream.skills import SkillShelf
from apcore_mcp.upstream.toolsets import UpstreamRuntime

logger = logging.getLogger(__name__)

CONFIG_POLL_SECONDS = 2.0


class ToolsetFollower(Protocol):
    """Endpoints per toolset of the config (the HTTP app's ``ToolsetEndpoints``), kept in step on reload."""

    def run(self, config: UpstreamConfig, *, skip: str | None = None) -> AbstractAsyncContextManager[object]:
        """Serve an endpoint per toolset of ``config`` but ``skip`` until the block ends."""
        ...  # pragma: no cover

    async def update(self, config: UpstreamConfig, *, skip: str | None = None) -> None: ...  # pragma: no cover

    def refresh(self) -> None: ...  # pragma: no cover


@contextlib.asynccontextmanager
async def serving_upstreams(
    bridge: Bridge, *, endpoints: ToolsetFollower | None = None, handle_sighup: bool | None = None
) -> AsyncIterator[UpstreamRuntime | None]:
    """The mounted upstream servers of ``bridge`` (``None`` without a config) while serving."""
    settings = bridge.settings
    if bridge.upstream_config is None:
        yield None
        return
    environ = os.environ
    main = main_toolset(bridge.upstream_config, settings).name
    config, relay_to = bridge.upstream_config, bridge.skill_shelf if settings.skills else None
    async with mount_upstreams(
        bridge.registry, settings, environ, config=config, skills=relay_to, held=bridge.held
    ) as runtime:
        assert runtime is not None
        bridge.refilter()
        per_toolset = endpoints.run(runtime.config, skip=main) if endpoints is not None else contextlib.nullcontext()
        announced = relay_to if settings.dynamic else None  # clients were promised list changes only then
        async with per_toolset, _announcing(announced, bridge), anyio.create_task_group() as tasks:

            async def reload() -> None:
                await runtime.recheck_pins()  # SIGHUP after `pins approve`: every process follows the file
                config = await anyio.to_thread.run_sync(read_config, settings, environ)  # file I/O
                if config is None:
                    return
                switch = await reload_upstreams(runtime, settings, environ, config=config)
                if switch is None:
                    return  # refused (logged): servers, toolsets and selection all stay as they were
                if endpoints is not None:
                    await endpoints.update(config, skip=main)
                if bridge.selection is not None:
                    bridge.selection.update(main_toolset(config, settings))
                    bridge.refilter()
                if endpoints is not None:
                    endpoints.refresh()

            if settings.mcp_config is not None:  # --from-openapi alone has no file to follow
                tasks.start_soon(partial(watch_config, settings.mcp_config, reload, interval=CONFIG_POLL_SECONDS))
            pins = pins_path(settings) if runtime.pins is not None else None
            if pins is not None:
                tasks.start_soon(partial(watch_config, pins, runtime.recheck_pins, interval=CONFIG_POLL_SECONDS))
            if handle_sighup if handle_sighup is not None else threading.current_thread() is threading.main_thread():
                await tasks.start(_reload_on_sighup, reload)
            yield runtime
            tasks.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def _announcing(shelf: SkillShelf | None, bridge: Bridge) -> AsyncIterator[None]:
    """Relayed skills that change (an upstream's list_changed) are announced as the resources they are."""
    remove = shelf.on_change(partial(bridge.notifier.changed, tools=False, resources=True)) if shelf else None
    try:
        yield
    finally:
        if remove is not None:
            remove()


async def _reload_on_sighup(
    reload: Callable[[], Awaitable[None]], *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        task_status.started()
        async for _ in signals:
            logger.info("SIGHUP: reloading the upstream config")
            await reload()


def drifted_count(runtime: UpstreamRuntime | None) -> int:
    """How many upstream tools and relayed skills are held from their pins now (drifted, new or unpinned)."""
    if runtime is None or runtime.pins is None:
        return 0
    return len(runtime.pins.held())


def readiness(runtime: UpstreamRuntime | None) -> dict[str, Any] | None:
    """What ``/ready`` says about upstreams: server names and states, never a secret or a tool name.

    ``/ready`` is open without authentication (for probes), so it says what a probe and a
    dashboard need and nothing a caller would need a token to see. ``mounted`` has each
    mounted server's tool count; ``failed`` names the servers that could not be mounted and
    those whose connection broke (a message too large, a failed restart) and has not been
    restarted yet, with the short reason (``UpstreamError.public``: the exit code of a stdio
    process, never its command or stderr, which are in the log); ``pool`` has each running
    server's state and counts of what it sent that was unusable; ``drifted_tools`` counts the tools
    held from their pins (their names and hashes are the operator's: ``/admin/tools``).
    """
    if runtime is None:
        return None
    status = runtime.status()
    broken = {name: entry["error"] for name, entry in status["pool"].items() if "error" in entry}
    drifted = drifted_count(runtime)
    failed = {**status["failed"], **broken}
    return {"mounted": status["mounted"], "failed": failed, "pool": status["pool"], "drifted_tools": drifted}
