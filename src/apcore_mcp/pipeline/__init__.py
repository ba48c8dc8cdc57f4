"""A fast, cancellable execution pipeline for apcore 0.32's ``Executor``.

Opt in for your own executor (keeps its ACL, approval handler, middleware and config)::

    from apcore_mcp.pipeline import install_pipeline

    executor = install_pipeline(Executor(registry, acl=acl), sync_workers=16, timeout_ceiling_ms=60_000)

or build one for a bare registry with ``build_executor(registry, ...)``. What changes:

- **Speed.** Schema dicts and the redaction walkers over them are built once per module version
  (``plans.PlanCache``), not three times per call; results, errors, format warnings and the
  ``redacted_inputs`` / ``redacted_output`` captures are apcore's.
- **Cancellation.** Cancelling the caller's task cancels an async module's coroutine and sets
  the call's ``CancelToken``; a timeout does the same, then raises apcore's ``ModuleTimeoutError``.
- **Sync modules** run in a bounded pool of the pipeline's own (``pool.SyncPool``) where a call
  that timed out or was cancelled frees its slot, so slow calls cannot starve the others.
- **Timeout ceiling.** The effective timeout is ``min(module timeout or default, ceiling)``.

``close_pipeline(executor)`` shuts the pool down; ``lease_pipeline(executor)`` holds it open for a
server and shuts it when the last lease is released.
"""

from __future__ import annotations

from apcore_mcp.pipeline.install import (
    DEFAULT_SYNC_WORKERS,
    FastPipeline,
    build_executor,
    close_pipeline,
    install_pipeline,
    installed_pipeline,
    lease_pipeline,
)
from apcore_mcp.pipeline.sync_pool import PoolClosedError, SyncPool

__all__ = [
    "DEFAULT_SYNC_WORKERS",
    "FastPipeline",
    "PoolClosedError",
    "SyncPool",
    "build_executor",
    "close_pipeline",
    "install_pipeline",
    "installed_pipeline",
    "lease_pipeline",
]
