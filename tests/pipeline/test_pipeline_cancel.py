"""Cancellation and timeouts through the fast pipeline: the module stops, its token is set, nothing stays behind.

Modules report through events and markers (started, saw the token, was cancelled, reached its
end); every wait is bounded by a generous hang guard, and nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from apcore import Context, Executor, Registry
from apcore.errors import ModuleTimeoutError

from apcore_mcp.pipeline import build_executor, close_pipeline
from apcore_mcp.pipeline.execute import effective_timeout_ms

from tests._support.waiters import HANG_GUARD_S, AsyncWaiter, SyncWaiter, wait_thread_event, with_timeout


@pytest.fixture
async def served() -> AsyncIterator[tuple[Registry, Executor]]:
    registry = Registry()
    executor = build_executor(registry, sync_workers=2, max_abandoned=8)
    yield registry, executor
    close_pipeline(executor)


async def test_cancelling_the_caller_cancels_an_async_module(served: tuple[Registry, Executor]) -> None:
    registry, executor = served
    module = AsyncWaiter()
    registry.register("c.wait", module)
    call = asyncio.create_task(executor.call_async("c.wait", {}, Context.create()))
    await asyncio.wait_for(module.all_started.wait(), HANG_GUARD_S)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (module.cancelled, module.reached_end) == (1, 0)
    assert module.token_set_when_cancelled == [True]  # set before the module saw the cancellation
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_timed_out_async_module_is_cancelled(served: tuple[Registry, Executor]) -> None:
    registry, executor = served
    module = with_timeout(AsyncWaiter(), 50)
    registry.register("c.wait", module)
    with pytest.raises(ModuleTimeoutError) as raised:
        await executor.call_async("c.wait", {}, Context.create())
    assert raised.value.details["timeout_ms"] == 50
    assert (module.cancelled, module.reached_end) == (1, 0)
    assert module.token_set_when_cancelled == [True]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_module_that_ignores_cancellation_still_times_out(served: tuple[Registry, Executor]) -> None:
    registry, executor = served
    module = with_timeout(AsyncWaiter(swallow=True), 50)
    registry.register("c.stubborn", module)
    with pytest.raises(ModuleTimeoutError):
        await executor.call_async("c.stubborn", {}, Context.create())
    assert module.cancelled == 1


@pytest.mark.parametrize(
    ("timeout_ms", "error"),
    [(50, ModuleTimeoutError), (None, asyncio.CancelledError)],
    ids=["on_timeout", "when_the_caller_is_cancelled"],
)
async def test_a_sync_module_sees_its_token(
    served: tuple[Registry, Executor], timeout_ms: int | None, error: type[BaseException]
) -> None:
    registry, executor = served
    module = SyncWaiter() if timeout_ms is None else with_timeout(SyncWaiter(), timeout_ms)
    registry.register("c.sync", module)
    call = asyncio.create_task(executor.call_async("c.sync", {}, Context.create()))
    await wait_thread_event(module.started_event)
    if timeout_ms is None:
        call.cancel()
    with pytest.raises(error):
        await call
    await wait_thread_event(module.returned_event)
    assert module.saw_token == [True]


async def test_a_token_cancelled_before_the_call_stops_it_early(served: tuple[Registry, Executor]) -> None:
    from apcore.cancel import CancelToken, ExecutionCancelledError

    registry, executor = served
    module = AsyncWaiter()
    registry.register("c.wait", module)
    token = CancelToken()
    token.cancel()
    with pytest.raises(ExecutionCancelledError):
        await executor.call_async("c.wait", {}, Context.create(cancel_token=token))
    assert module.started == 0


async def test_a_hundred_cancelled_calls_leave_nothing_behind(served: tuple[Registry, Executor]) -> None:
    """100 async and 100 sync calls cancelled mid-flight: no task left, only pool-size sync calls ever ran."""
    registry, executor = served
    waiter, blocker = AsyncWaiter(), SyncWaiter()
    waiter.expected = 100
    registry.register("c.wait", waiter)
    registry.register("c.sync", blocker)
    calls = [asyncio.create_task(executor.call_async("c.wait", {}, Context.create())) for _ in range(100)]
    calls += [asyncio.create_task(executor.call_async("c.sync", {}, Context.create())) for _ in range(100)]
    await asyncio.wait_for(waiter.all_started.wait(), HANG_GUARD_S)
    await wait_thread_event(blocker.started_event)
    for call in calls:
        call.cancel()
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert (waiter.cancelled, waiter.reached_end) == (100, 0)
    blocker.expect_returns = blocker.started
    await wait_thread_event(blocker.returned_event)
    assert blocker.started <= 2  # the pool's size: the 98 waiting calls were dropped, never run
    assert all(blocker.saw_token)


@pytest.mark.parametrize(
    ("declared", "default", "ceiling", "expected"),
    [
        (None, 30000, None, 30000),
        (None, 30000, 500, 500),
        (100, 30000, 500, 100),
        (900, 30000, 500, 500),
        (0, 30000, 500, 500),  # 0 = no limit: the ceiling applies
        (0, 30000, None, 0),
        (None, 0, 500, 500),
    ],
)
def test_effective_timeout(declared: int | None, default: int, ceiling: int | None, expected: int) -> None:
    assert effective_timeout_ms(declared, default, ceiling) == expected


@pytest.mark.parametrize(("declared", "expected_ms"), [(None, 60), (5000, 60), (0, 60), (30, 30)])
async def test_the_timeout_ceiling_cuts_long_timeouts(declared: int | None, expected_ms: int) -> None:
    registry = Registry()
    module = AsyncWaiter()
    if declared is not None:
        with_timeout(module, declared)
    registry.register("c.wait", module)
    executor = build_executor(registry, timeout_ceiling_ms=60)
    with pytest.raises(ModuleTimeoutError) as raised:
        await executor.call_async("c.wait", {}, Context.create())
    close_pipeline(executor)
    assert raised.value.details["timeout_ms"] == expected_ms
    assert module.cancelled == 1


async def test_a_context_without_token_gets_one(served: tuple[Registry, Executor]) -> None:
    from apcore.pipeline import PipelineContext

    from apcore_mcp.pipeline.execute import CancellableExecute

    registry, executor = served
    module = with_timeout(SyncWaiter(), 50)
    registry.register("c.sync", module)
    step = next(s for s in executor.current_strategy.steps if isinstance(s, CancellableExecute))
    context = Context.create()
    assert context.cancel_token is None
    pipe = PipelineContext(module_id="c.sync", inputs={}, context=context, module=module)
    with pytest.raises(ModuleTimeoutError):
        await step.execute(pipe)
    assert context.cancel_token is not None and context.cancel_token.is_cancelled
    await wait_thread_event(module.returned_event)
    assert module.saw_token == [True]
