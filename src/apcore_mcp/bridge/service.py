"""What lives while a bridge is served: ``BridgeService``, entered once by the runner hosting it.

A ``Bridge`` is wiring and has nothing to close. Everything with a lifetime is here, and
entering the service starts it in this order (leaving undoes it in reverse):

1. the Executor's sync pool, when the bridge built the Executor: a lease, so the pool's
   threads end when the last service using it ends, and a later service opens it again;
2. the notifier delivers on the serving event loop;
3. with ``settings.dynamic``, the catalogs follow the registry, and clients hear of each
   change (modules registered between the bridge's build and now are read first);
4. with ``settings.redis_url``, the replicas' Redis link: shared rate-limit buckets, the
   record of used approvals and the change broadcast (``apcore_mcp.replicas``); else with
   ``settings.workers`` above 1, the same (no broadcast) in the workers' private SQLite store
   (``apcore_mcp.replicas.machine``);
5. with ``settings.mcp_config``, the upstream MCP servers: mounted, reloaded on change,
   unmounted on exit (``upstreams.py``);
6. the task runner (``tasks/runner.py``): calls started as tasks run in its task group, their records
   in Redis while the replicas are linked; leaving stops the work still running (those tasks fail).

The runners enter it: ``run_stdio``, the app's lifespan (``create_app``), and through them
``serve()`` and ``BackgroundServer``. A per-toolset endpoint enters one for its own bridge,
without the replicas link and upstreams, which the main one holds for all.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio

from apcore_mcp.bridge.core import Bridge
from apcore_mcp.bridge.upstreams import ToolsetFollower, serving_upstreams
from apcore_mcp.bridge.workers import announce_workers, machine_directory
from apcore_mcp.mcp.notifier import change_of
from apcore_mcp.pipeline import lease_pipeline

if TYPE_CHECKING:
    from apcore_mcp.replicas.machine.state import MachineState
    from apcore_mcp.replicas.shared import SharedState
    from apcore_mcp.upstream.toolsets import UpstreamRuntime


class BridgeService:
    """The lifetime of one served bridge (see the module doc); an async context manager, entered once."""

    def __init__(
        self,
        bridge: Bridge,
        *,
        toolsets: ToolsetFollower | None = None,
        replicas: bool = True,
        handle_sighup: bool | None = None,
    ) -> None:
        self.bridge = bridge
        self.upstreams: UpstreamRuntime | None = None
        """The mounted upstream servers while serving (``None`` without a config)."""
        self.replicas: SharedState | MachineState | None = None
        """The state shared with other processes while serving: the replicas' Redis, or the workers'
        store (``None`` for a single process without ``redis_url``)."""
        self._toolsets = toolsets
        self._with_replicas = replicas
        self._handle_sighup = handle_sighup
        self._stack: contextlib.AsyncExitStack | None = None
        self._started_at: float | None = None

    @property
    def uptime_seconds(self) -> float:
        return 0.0 if self._started_at is None else time.monotonic() - self._started_at

    async def problems(self) -> dict[str, str]:
        """What runs degraded (``{"redis": "unreachable ..."}``): still serving, so still ready."""
        return await self.replicas.problems() if self.replicas is not None else {}

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("BridgeService is entered once")
        bridge = self.bridge
        async with contextlib.AsyncExitStack() as stack:
            if bridge.owns_executor:
                stack.callback(lease_pipeline(bridge.executor))
            bridge.notifier.bind(asyncio.get_running_loop())
            if bridge.settings.dynamic:
                self._follow_registry(stack)
            if self._with_replicas and (bridge.settings.redis_url is not None or bridge.settings.workers > 1):
                await self._link_replicas(stack)
            self.upstreams = await stack.enter_async_context(
                serving_upstreams(bridge, endpoints=self._toolsets, handle_sighup=self._handle_sighup)
            )
            # last in, first out: tasks settle while Redis is linked
            await stack.enter_async_context(bridge.tasks.served())
            self._started_at = time.monotonic()
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        stack, self._stack = self._stack, None
        self.upstreams = None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    def _follow_registry(self, stack: contextlib.AsyncExitStack) -> None:
        bridge = self.bridge
        catalog = bridge.full_catalog
        catalog.watch()
        stack.callback(catalog.unwatch)
        if bridge.search is None:
            stack.callback(catalog.subscribe(lambda record: bridge.notifier.announce(change_of(record))))
        if catalog.catch_up() and bridge.search is None:  # what registered since the build, now followed
            bridge.notifier.changed(tools=True, resources=True)

    async def _link_replicas(self, stack: contextlib.AsyncExitStack) -> None:
        bridge = self.bridge
        shared: SharedState | MachineState | None
        if bridge.settings.redis_url is not None:
            from apcore_mcp.replicas.shared import shared_state  # redis is an optional dependency

            shared = shared_state(bridge.settings, bridge.executor, bridge.notifier, bridge.catalog)
        else:
            from apcore_mcp.replicas.machine.state import machine_state

            shared = machine_state(bridge.settings, bridge.executor, machine_directory())
        if shared is None:
            return
        announce_workers(bridge.settings)
        stack.push_async_callback(shared.aclose)
        # This process's buckets count while Redis is away.
        stack.callback(self.bridge.limits.share(shared.buckets(self.bridge.limits.buckets)))
        stack.enter_context(bridge.tasks.using(shared.tasks(bridge.settings.task_max_bytes)))
        tasks = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tasks.cancel_scope.cancel)
        tasks.start_soon(shared.run)
        self.replicas = shared
        stack.callback(setattr, self, "replicas", None)
