"""The keywords of ``serve()`` that are code, not settings: ``on_startup``, ``on_shutdown``, ``metrics_collector``.

They are not ``Settings`` (nothing in the environment or on a command line can name a function or
an object), so they travel beside them, checked once here. ``on_startup`` runs once the server is
ready to serve and ``on_shutdown`` once it has stopped; either may be a plain function or return an
awaitable (an ``async def``). A ``metrics_collector`` (``apcore.MetricsCollector`` or anything with
its three recording methods) is told each tool call's module id, outcome and duration.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from apcore_mcp.calls.router import CallRouter

logger = logging.getLogger(__name__)

Hook = Callable[[], object]
"""A callback taking no arguments; when it returns an awaitable (``async def``), that is awaited."""


@runtime_checkable
class CallMetrics(Protocol):
    """What a ``metrics_collector`` offers: the recording methods of ``apcore.MetricsCollector``."""

    def increment_calls(self, module_id: str, status: str) -> None: ...  # pragma: no cover

    def increment_errors(self, module_id: str, error_code: str) -> None: ...  # pragma: no cover

    def observe_duration(self, module_id: str, duration_seconds: float) -> None: ...  # pragma: no cover


class StartupHookError(RuntimeError):
    """``on_startup`` raised: the server stopped instead of serving (the callback's error is the cause)."""


@dataclass(frozen=True, kw_only=True)
class ServeHooks:
    """The code a caller gives ``serve()``/``BackgroundServer``; checked on construction.

    Raises:
        TypeError: a callback that is not callable, or a collector without the recording methods.
    """

    on_startup: Hook | None = None
    on_shutdown: Hook | None = None
    metrics_collector: CallMetrics | None = None

    def __post_init__(self) -> None:
        for name in ("on_startup", "on_shutdown"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")
        collector = self.metrics_collector
        if collector is not None and not isinstance(collector, CallMetrics):
            raise TypeError(
                "metrics_collector must be an apcore MetricsCollector (increment_calls, increment_errors, "
                f"observe_duration) or None, got {type(collector).__name__}"
            )

    async def started(self) -> None:
        """Run ``on_startup``.

        Raises:
            StartupHookError: it raised (logged first); the caller stops the server.
        """
        if self.on_startup is None:
            return
        try:
            await _run(self.on_startup)
        except Exception as exc:
            logger.exception("on_startup raised %s; the server stops", type(exc).__name__)
            raise StartupHookError(f"on_startup raised {type(exc).__name__}: {exc}") from exc

    async def stopped(self) -> None:
        """Run ``on_shutdown``; an error in it is logged, and the shutdown goes on."""
        if self.on_shutdown is None:
            return
        try:
            await _run(self.on_shutdown)
        except Exception:  # the caller's code, at the edge of the shutdown
            logger.exception("on_shutdown raised; the server has stopped regardless")

    def observe(self, router: CallRouter) -> None:
        """Tell the collector about every call ``router`` runs (nothing is added without one)."""
        if self.metrics_collector is not None:
            router.observers.append(CollectorFeed(self.metrics_collector))


NO_HOOKS = ServeHooks()


async def _run(hook: Hook) -> None:
    result = hook()
    if inspect.isawaitable(result):
        await result


class CollectorFeed:
    """A router observer recording each call as ``apcore.MetricsMiddleware`` does.

    ``ok`` counts as status ``success``; any other outcome (an error kind, ``cancelled``, a
    refusal's reason, ``input_required``) as ``error``, with the outcome as its error code. A
    tool the router does not serve is told as ``calls.UNKNOWN_TOOL`` (bounded label values).
    """

    def __init__(self, collector: CallMetrics) -> None:
        self.collector = collector

    def __call__(self, module_id: str, kind: str, seconds: float) -> None:
        try:
            if kind == "ok":
                self.collector.increment_calls(module_id, "success")
            else:
                self.collector.increment_calls(module_id, "error")
                self.collector.increment_errors(module_id, kind)
            self.collector.observe_duration(module_id, seconds)
        except Exception:  # the caller's collector must not turn a call into an error
            logger.exception("metrics_collector raised while recording a call of %s", module_id)
