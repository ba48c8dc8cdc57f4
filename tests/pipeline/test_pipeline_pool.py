"""The sync pool (abandoned calls free their slot, a hard bound on abandoned threads) and the install API."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
from apcore import Context, Executor, Registry
from apcore.errors import ModuleExecuteError, ModuleTimeoutError
from apcore.pipeline import ExecutionStrategy

from apcore_mcp.pipeline import (
    FastPipeline,
    PoolClosedError,
    SyncPool,
    build_executor,
    close_pipeline,
    install_pipeline,
    installed_pipeline,
)

from tests._support.pipeline import make_registry
from tests._support.waiters import HANG_GUARD_S, Empty, SyncWaiter, wait_thread_event, with_timeout

WORKERS = 2


def pipeline_of(executor: Executor) -> FastPipeline:
    """The fast pipeline installed on ``executor`` (there must be one)."""
    pipeline = installed_pipeline(executor)
    assert pipeline is not None
    return pipeline


class Quick:
    description = "Answers at once"
    input_schema = Empty
    output_schema = Empty
    resources: ClassVar[dict[str, int]] = {"timeout": int(HANG_GUARD_S * 1000)}

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"thread": threading.current_thread().name}


@pytest.fixture
async def stuck() -> AsyncIterator[tuple[Executor, SyncWaiter]]:
    """A pipeline of ``WORKERS`` slots and a sync module that ignores its token until released."""
    registry = Registry()
    module = with_timeout(SyncWaiter(stubborn=True), 50)
    registry.register("p.stuck", module)
    registry.register("p.quick", Quick())
    executor = build_executor(registry, sync_workers=WORKERS, max_abandoned=WORKERS + 6)
    yield executor, module
    module.release.set()
    close_pipeline(executor)


async def time_out_in_waves(executor: Executor, module: SyncWaiter, calls: int) -> None:
    """``calls`` stuck calls, ``WORKERS`` at a time, so that every one of them really starts."""
    for first in range(0, calls, WORKERS):
        wave = [executor.call_async("p.stuck", {}, Context.create()) for _ in range(min(WORKERS, calls - first))]
        outcomes = await asyncio.gather(*wave, return_exceptions=True)
        assert all(isinstance(outcome, ModuleTimeoutError) for outcome in outcomes), outcomes
    assert module.started == calls


async def test_timed_out_sync_calls_do_not_starve_the_others(stuck: tuple[Executor, SyncWaiter]) -> None:
    executor, module = stuck
    await time_out_in_waves(executor, module, WORKERS + 6)
    pool = pipeline_of(executor).pool
    assert pool.stats()["abandoned"] == WORKERS + 6  # all still stuck in their module
    assert await executor.call_async("p.quick", {}, Context.create())
    module.expect_returns = WORKERS + 6
    module.release.set()
    await wait_thread_event(module.returned_event)
    assert module.saw_token == [True] * (WORKERS + 6)


async def test_the_abandoned_thread_bound_holds_and_warns(
    stuck: tuple[Executor, SyncWaiter], caplog: pytest.LogCaptureFixture
) -> None:
    executor, module = stuck
    pool = pipeline_of(executor).pool
    with caplog.at_level(logging.WARNING, logger="apcore_mcp.pipeline.sync_pool"):
        await time_out_in_waves(executor, module, pool.max_abandoned + WORKERS)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, "one WARNING when the bound is reached, not one per call"
    stats = pool.stats()
    assert stats["abandoned"] == pool.max_abandoned  # never more
    assert stats["busy"] == WORKERS  # the calls past the bound kept their slot
    assert stats["threads"] <= WORKERS + pool.max_abandoned
    with pytest.raises(ModuleTimeoutError):  # capacity is exhausted until a module returns
        await executor.call_async("p.stuck", {}, Context.create())
    module.expect_returns = module.started - 1  # the call just made never got a slot
    module.release.set()
    await wait_thread_event(module.returned_event)
    assert await executor.call_async("p.quick", {}, Context.create())


def test_pool_runs_at_most_size_calls_and_reuses_threads() -> None:
    pool = SyncPool(2)
    gate = threading.Event()
    running: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> str:
        with lock:
            running.append(n)
        gate.wait(HANG_GUARD_S)
        return threading.current_thread().name

    jobs = [pool.submit(work, n) for n in range(5)]
    assert pool.stats()["waiting"] == 3
    gate.set()
    names = {job.future.result(HANG_GUARD_S) for job in jobs}
    assert len(names) == 2 and sorted(running) == list(range(5))
    stats = pool.stats()
    assert (stats["busy"], stats["waiting"], stats["threads"]) == (0, 0, 2)
    pool.close()


def test_close_fails_waiting_calls_and_refuses_new_ones() -> None:
    pool = SyncPool(1)
    gate = threading.Event()
    running = pool.submit(gate.wait, HANG_GUARD_S)
    waiting = pool.submit(lambda: "never")
    pool.close()
    with pytest.raises(PoolClosedError):
        waiting.future.result(HANG_GUARD_S)
    with pytest.raises(PoolClosedError):
        pool.submit(lambda: None)
    gate.set()
    assert running.future.result(HANG_GUARD_S) is True
    pool.close()  # idempotent


def test_the_last_lease_closes_the_pool_and_a_new_one_opens_it() -> None:
    pool = SyncPool(1)
    first, second = pool.lease(), pool.lease()  # two servers serving one executor
    first()
    first()  # a release counts once
    assert pool.submit(lambda: "open").future.result(HANG_GUARD_S) == "open"
    second()
    with pytest.raises(PoolClosedError):
        pool.submit(lambda: None)
    again = pool.lease()  # a later server serves the same executor
    assert pool.submit(lambda: "again").future.result(HANG_GUARD_S) == "again"
    again()
    assert pool.stats()["threads"] == 0  # the idle thread ended with the last lease


@pytest.mark.parametrize(("size", "abandoned"), [(0, None), (1, -1)])
def test_pool_rejects_bad_sizes(size: int, abandoned: int | None) -> None:
    with pytest.raises(ValueError):
        SyncPool(size, max_abandoned=abandoned)


async def test_install_keeps_governance_and_is_idempotent() -> None:
    from apcore.acl import ACL, ACLRule
    from apcore.approval import AutoApproveHandler

    acl = ACL([ACLRule(callers=["*"], targets=["*"], effect="allow")])
    executor = Executor(make_registry(), acl=acl, approval_handler=AutoApproveHandler())
    names = executor.current_strategy.step_names()
    assert install_pipeline(executor, sync_workers=3) is executor
    pipeline = installed_pipeline(executor)
    assert pipeline is not None and pipeline.pool.size == 3
    steps = list(executor.current_strategy.steps)
    assert install_pipeline(executor) is executor and install_pipeline(executor, sync_workers=3) is executor
    assert executor.current_strategy.steps == steps and installed_pipeline(executor) is pipeline
    assert executor.current_strategy.step_names() == names
    state = executor.governance_state()
    assert state.builtin_acl_gate_wired and state.acl_configured and state.approval_handler_configured
    with pytest.raises(ValueError, match="sync_workers"):
        install_pipeline(executor, sync_workers=5)
    assert (await executor.call_async("eq.echo", {"text": "hi"}, Context.create())) == {"text": "hi"}
    assert executor.validate("eq.echo", {"text": 1}).valid is False  # dry runs still go through the steps
    close_pipeline(executor)


def test_build_executor_and_the_sync_api() -> None:
    executor = build_executor(make_registry(), sync_workers=1, timeout_ceiling_ms=5000)
    assert executor.call("eq.echo", {"text": "hi"}) == {"text": "hi"}
    assert pipeline_of(executor).timeout_ceiling_ms == 5000
    assert installed_pipeline(Executor(make_registry())) is None
    close_pipeline(executor)
    with pytest.raises(ModuleExecuteError):  # sync modules need the pool
        executor.call("eq.echo", {"text": "hi"})
    close_pipeline(executor)
    executor.close()


def test_a_strategy_without_builtin_steps_is_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    registry = make_registry()
    executor = Executor(registry, strategy=ExecutionStrategy("custom", [], validate_dependencies=False))
    with caplog.at_level(logging.WARNING):
        assert install_pipeline(executor) is executor
    assert installed_pipeline(executor) is None and "nothing changed" in caplog.text


def test_a_collected_executor_releases_its_pool_and_listener() -> None:
    registry = Registry()
    registry.register("p.quick", Quick())  # keeps no context (a context refers to its executor)
    executor = build_executor(registry)
    pipeline = installed_pipeline(executor)
    assert pipeline is not None
    pool, plans = pipeline.pool, pipeline.plans
    asyncio.run(executor.call_async("p.quick", {}))  # not call(): its cached loop would outlive the test
    assert len(plans) == 1
    del executor, pipeline
    gc.collect()
    with pytest.raises(PoolClosedError):
        pool.submit(lambda: None)
    registry.unregister("p.quick")  # the listener is gone; the registry still works
    assert len(plans) == 0
