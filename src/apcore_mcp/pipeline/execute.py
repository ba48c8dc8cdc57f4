"""The ``execute`` step, made cancellable: apcore's checks and timeouts, our way of waiting.

apcore 0.32's ``BuiltinExecute`` starts the module in a task of its own and waits on it with
``asyncio.wait``: cancelling the caller leaves that task running, and a timeout only sets the
``CancelToken`` and walks away. Here, in both cases, the call's ``CancelToken`` is set first, then
an async module's task is cancelled and awaited until it has unwound (nothing is left behind),
and a sync module's call is abandoned in the :class:`~apcore_mcp.pipeline.sync_pool.SyncPool`, which
gives its slot to the next call. A timeout still raises apcore's ``ModuleTimeoutError``; a
cancelled caller gets its ``CancelledError``. Everything else (the cancel-token and deadline
checks, streaming set-up, how the timeout is read, its clamping to the global deadline, error
types and messages) is apcore's, plus an optional ceiling on the timeout.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from apcore import Context
from apcore.cancel import CancelToken, ExecutionCancelledError
from apcore.errors import ModuleTimeoutError
from apcore.pipeline import PipelineContext, StepResult
from apcore.streaming import StreamingModule

from apcore_mcp._apcore import BuiltinExecute, adopt_state, default_timeout_ms, read_module_timeout_ms
from apcore_mcp.pipeline.sync_pool import Job, SyncPool

if TYPE_CHECKING:
    from apcore_mcp.pipeline.install import FastPipeline


def effective_timeout_ms(declared_ms: int | None, default_ms: int, ceiling_ms: int | None) -> int:
    """The module's timeout (or the default when it declares none), capped by the ceiling.

    ``0`` means "no limit" as in apcore; with a ceiling, no limit becomes the ceiling.
    """
    timeout = default_ms if declared_ms is None else declared_ms
    if ceiling_ms is None:
        return timeout
    return ceiling_ms if timeout <= 0 else min(timeout, ceiling_ms)


def call_token(context: Context) -> CancelToken:
    """The call context's ``CancelToken``, created on it if it has none."""
    token = getattr(context, "cancel_token", None)
    if token is None:
        token = CancelToken()
        context.cancel_token = token
    return token


class CancellableExecute(BuiltinExecute):  # type: ignore[misc]  # apcore ships no type information
    """``BuiltinExecute`` whose module call ends when its caller's task is cancelled or times out."""

    pool: SyncPool
    timeout_ceiling_ms: int | None
    pipeline: FastPipeline | None = None  # the installation this step belongs to (set by install_pipeline)
    default_timeout_ms: int

    @classmethod
    def adopt(cls, original: BuiltinExecute, pool: SyncPool, timeout_ceiling_ms: int | None) -> CancellableExecute:
        """Take over a built-in step's state (its configured fields and default timeout)."""
        step: CancellableExecute = cls.__new__(cls)
        adopt_state(step, original)
        step.default_timeout_ms = default_timeout_ms(original)
        step.pool = pool
        step.timeout_ceiling_ms = timeout_ceiling_ms
        return step

    async def execute(self, ctx: PipelineContext) -> StepResult:
        module = ctx.module
        if module is None:
            return StepResult(action="abort", explanation="No module set on context")
        token = call_token(ctx.context)
        if token.is_cancelled:
            raise ExecutionCancelledError()
        deadline = getattr(ctx.context, "global_deadline", None)
        if deadline is not None and time.time() > deadline:  # epoch seconds, as apcore (D-99)
            token.cancel()
            raise ModuleTimeoutError(module_id=ctx.module_id, timeout_ms=int(self.default_timeout_ms))

        inputs = ctx.validated_inputs if ctx.validated_inputs is not None else ctx.inputs
        if ctx.stream and isinstance(module, StreamingModule):
            ctx.output_stream = module.stream(inputs, ctx.context)
            return StepResult(action="skip_to", skip_to="return_result")

        declared = read_module_timeout_ms(module, ctx.module_id)
        timeout_ms = effective_timeout_ms(declared, self.default_timeout_ms, self.timeout_ceiling_ms)
        timeout_s = timeout_ms / 1000.0 if timeout_ms > 0 else None
        if deadline is not None:
            remaining = deadline - time.time()
            if remaining <= 0:
                token.cancel()
                raise ModuleTimeoutError(module_id=ctx.module_id, timeout_ms=int(self.default_timeout_ms))
            if timeout_s is None or remaining < timeout_s:
                timeout_s = remaining

        if inspect.iscoroutinefunction(module.execute):
            call = _run_async(module.execute(inputs, ctx.context), timeout_s, token)
        else:
            call = _run_sync(self.pool, module.execute, inputs, ctx.context, timeout_s, token)
        ctx.output = await _timed(call, ctx.module_id, timeout_s)
        return StepResult(action="continue")


class _Expired(Exception):
    """The module ran out of time (internal: becomes ``ModuleTimeoutError``)."""


async def _timed(call: Awaitable[object], module_id: str, timeout_s: float | None) -> object:
    # apcore turns any TimeoutError escaping the module into ModuleTimeoutError as well.
    try:
        return await call
    except (_Expired, TimeoutError):
        raise ModuleTimeoutError(module_id=module_id, timeout_ms=int((timeout_s or 0) * 1000)) from None


async def _run_async(coro: Coroutine[object, object, object], timeout_s: float | None, token: CancelToken) -> object:
    # A task of its own, as apcore: the module's context variables stay its own.
    task: asyncio.Future[object] = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except asyncio.CancelledError:
        token.cancel()
        await _unwind(task)
        raise
    if not done:
        token.cancel()
        await _unwind(task)
        raise _Expired
    return task.result()


async def _unwind(task: asyncio.Future[object]) -> None:
    """Cancel the module's task and wait until it has finished; its outcome is discarded."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved, so a late failure is not logged as "never retrieved"


async def _run_sync(
    pool: SyncPool,
    fn: Callable[[dict[str, Any], Context], object],
    inputs: dict[str, Any],
    context: Context,
    timeout_s: float | None,
    token: CancelToken,
) -> object:
    job = pool.submit(fn, inputs, context, doomed=_caller_gives_up(timeout_s))
    waiter = asyncio.wrap_future(job.future)
    try:
        done, _ = await asyncio.wait({waiter}, timeout=timeout_s)
    except asyncio.CancelledError:
        _give_up(pool, job, waiter, token)
        raise
    if not done:
        _give_up(pool, job, waiter, token)
        raise _Expired
    return waiter.result()


def _caller_gives_up(timeout_s: float | None) -> Callable[[], bool]:
    """Whether this caller is bound to abandon its call: cancellation requested or time up.

    Read by the pool (from any thread) before it starts a waiting call, so a burst of
    cancellations or timeouts does not start calls only to abandon them a moment later.
    """
    task = asyncio.current_task()
    baseline = task.cancelling() if task is not None else 0
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None

    def doomed() -> bool:
        if task is not None and task.cancelling() > baseline:
            return True
        return deadline is not None and time.monotonic() >= deadline

    return doomed


def _give_up(pool: SyncPool, job: Job, waiter: asyncio.Future[Any], token: CancelToken) -> None:
    token.cancel()  # first, so the module sees it as soon as it looks
    pool.abandon(job)
    waiter.cancel()  # the late result is dropped, never reported as unretrieved
