"""Giving an ``Executor`` the fast, cancellable pipeline: ``install_pipeline`` and ``build_executor``."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from apcore import Executor

from apcore_mcp._apcore import (
    BuiltinExecute,
    BuiltinInputValidation,
    BuiltinModuleLookup,
    BuiltinOutputValidation,
)
from apcore_mcp.pipeline.execute import CancellableExecute
from apcore_mcp.pipeline.plans import PlanCache
from apcore_mcp.pipeline.steps import FastInputValidation, FastModuleLookup, FastOutputValidation, PlannedStep
from apcore_mcp.pipeline.sync_pool import SyncPool

logger = logging.getLogger(__name__)

DEFAULT_SYNC_WORKERS = 16

_PLANNED = {
    BuiltinModuleLookup: FastModuleLookup,
    BuiltinInputValidation: FastInputValidation,
    BuiltinOutputValidation: FastOutputValidation,
}


class FastPipeline:
    """What one installation holds: the module plans, the sync pool and the timeout ceiling."""

    def __init__(self, registry: Any, *, sync_workers: int, max_abandoned: int | None, ceiling_ms: int | None) -> None:
        if ceiling_ms is not None and ceiling_ms <= 0:
            raise ValueError(f"timeout_ceiling_ms must be positive, got {ceiling_ms}")
        self.plans = PlanCache(registry)
        self.pool = SyncPool(sync_workers, max_abandoned=max_abandoned)
        self.timeout_ceiling_ms = ceiling_ms
        # Without close(), the executor's collection still ends idle threads and the registry listener.
        self._finalizer = weakref.finalize(self, _shut, self.pool, self.plans)

    def close(self) -> None:
        """Shut the sync pool down and stop following the registry (idempotent)."""
        self._finalizer()


def _shut(pool: SyncPool, plans: PlanCache) -> None:
    pool.close()
    plans.detach()


def install_pipeline(
    executor: Executor,
    *,
    sync_workers: int | None = None,
    timeout_ceiling_ms: int | None = None,
    max_abandoned: int | None = None,
) -> Executor:
    """Give ``executor`` the fast, cancellable pipeline, in place, and return it.

    ``install_pipeline(Executor(registry, acl=acl))`` keeps the executor's ACL, approval
    handler, policy, middleware and config: only apcore's built-in module-lookup,
    input-validation, output-validation and execute steps of its current strategy are swapped
    for equivalents that reuse per-module schema work and cancel the module when the caller is
    cancelled or times out. Steps that are not those exact built-in classes (a custom step, a
    subclass) are left alone. The strategy object is changed in place, so another executor
    sharing it gets the same steps.

    Args:
        sync_workers: how many sync modules may run at once in the pipeline's own thread pool
            (default ``DEFAULT_SYNC_WORKERS``).
        timeout_ceiling_ms: cap on every module's timeout, including modules with none.
        max_abandoned: how many threads of timed-out or cancelled sync calls may still be
            running before such calls keep their slot (default: twice ``sync_workers``).

    Installing again is a no-op when the arguments agree with the installed pipeline.

    Raises:
        ValueError: when already installed with other settings, or a setting is out of range.
    """
    installed = installed_pipeline(executor)
    if installed is not None:
        _check_same(installed, sync_workers, timeout_ceiling_ms, max_abandoned)
        return executor
    pipeline = FastPipeline(
        executor.registry,
        sync_workers=DEFAULT_SYNC_WORKERS if sync_workers is None else sync_workers,
        max_abandoned=max_abandoned,
        ceiling_ms=timeout_ceiling_ms,
    )
    steps = executor.current_strategy.steps
    # Same names at the same positions: the strategy's name index stays valid.
    for index, step in enumerate(steps):
        planned = _PLANNED.get(type(step))
        if planned is not None:
            steps[index] = planned.adopt(step, pipeline.plans)
        elif type(step) is BuiltinExecute:
            steps[index] = CancellableExecute.adopt(step, pipeline.pool, timeout_ceiling_ms)
        else:
            continue
        steps[index].pipeline = pipeline
    if installed_pipeline(executor) is None:
        logger.warning("install_pipeline: the executor's strategy has none of apcore's built-in steps; nothing changed")
        pipeline.close()
    return executor


def build_executor(
    registry: Any,
    *,
    acl: Any = None,
    approval_handler: Any = None,
    middlewares: list[Any] | None = None,
    config: Any = None,
    sync_workers: int | None = None,
    timeout_ceiling_ms: int | None = None,
    max_abandoned: int | None = None,
) -> Executor:
    """A new ``Executor`` for ``registry`` with the fast, cancellable pipeline installed."""
    executor = Executor(registry, acl=acl, approval_handler=approval_handler, middlewares=middlewares, config=config)
    return install_pipeline(
        executor, sync_workers=sync_workers, timeout_ceiling_ms=timeout_ceiling_ms, max_abandoned=max_abandoned
    )


def installed_pipeline(executor: Executor) -> FastPipeline | None:
    """The pipeline ``install_pipeline`` gave ``executor``, or None."""
    for step in executor.current_strategy.steps:
        if isinstance(step, PlannedStep | CancellableExecute) and isinstance(step.pipeline, FastPipeline):
            return step.pipeline
    return None


def lease_pipeline(executor: Executor) -> Callable[[], None]:
    """Hold the sync pool of ``executor``'s fast pipeline open until the returned function is called.

    The last release shuts the pool (see ``SyncPool.lease``); a no-op without a fast pipeline.
    """
    pipeline = installed_pipeline(executor)
    return pipeline.pool.lease() if pipeline is not None else _nothing


def _nothing() -> None:
    return None


def close_pipeline(executor: Executor) -> None:
    """Shut down the sync pool of ``executor``'s fast pipeline (no-op without one).

    Sync module calls made afterwards fail; async modules are unaffected.
    """
    pipeline = installed_pipeline(executor)
    if pipeline is not None:
        pipeline.close()


def _check_same(pipeline: FastPipeline, workers: int | None, ceiling: int | None, abandoned: int | None) -> None:
    wanted = {"sync_workers": workers, "timeout_ceiling_ms": ceiling, "max_abandoned": abandoned}
    actual = {
        "sync_workers": pipeline.pool.size,
        "timeout_ceiling_ms": pipeline.timeout_ceiling_ms,
        "max_abandoned": pipeline.pool.max_abandoned,
    }
    differing = [name for name, value in wanted.items() if value is not None and value != actual[name]]
    if differing:
        raise ValueError(f"the fast pipeline is already installed with {', '.join(differing)} = {actual}")
