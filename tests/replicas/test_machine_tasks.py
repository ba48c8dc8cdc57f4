"""Task records in the workers' SQLite store (``replicas/machine``), shared by real processes.

A task created in one process is read, cancelled and seen ending in another (spawned as uvicorn's
workers are); every process is joined, or killed past its deadline.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from apcore_mcp.replicas.machine.store import MachineStore
from apcore_mcp.replicas.machine.tasks import MachineTaskStore
from apcore_mcp.tasks.records import TaskRecord, TaskStoreFull

JOIN_SECONDS = 20.0
CONTEXT = multiprocessing.get_context("spawn")


def new_record(task_id: str, ttl_ms: int = 60_000) -> TaskRecord:
    return TaskRecord(task_id=task_id, owner="o", tool="t", ttl_ms=ttl_ms, poll_ms=100)


def task_worker(directory: Path, barrier: Any, results: Any) -> None:
    """Another worker: reads the task, marks it cancelled, watches it end."""
    store = MachineTaskStore(MachineStore.open(directory), max_count=10, max_bytes=100_000)

    async def run() -> tuple[str | None, list[str]]:
        ended: list[str] = []
        watching = asyncio.ensure_future(store.watch_ends(ended.append))
        await asyncio.sleep(0.3)  # watching from before the end
        barrier.wait()
        seen = await store.get("t1")
        await store.request_cancel("t1")
        deadline = time.monotonic() + 10
        while not ended and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        watching.cancel()
        return (seen.status if seen else None), ended

    results.put(asyncio.run(run()))


def test_a_task_is_read_cancelled_and_ended_across_processes(tmp_path: Path) -> None:
    store = MachineTaskStore(MachineStore.open(tmp_path), max_count=10, max_bytes=100_000)
    record = new_record("t1")
    asyncio.run(store.create(record))
    barrier = CONTEXT.Barrier(2)
    results = CONTEXT.Queue()
    other = CONTEXT.Process(target=task_worker, args=(tmp_path, barrier, results))
    other.start()
    try:
        barrier.wait()

        async def until_cancel_requested() -> None:
            deadline = time.monotonic() + 10
            while not await store.cancel_requested("t1"):
                assert time.monotonic() < deadline, "the other process's cancellation never arrived"
                await asyncio.sleep(0.05)
            record.status = "cancelled"
            await store.finish(record)
            record.status, record.status_message = "working", "a late progress report"
            await store.put(record)  # never undoes the end

        asyncio.run(until_cancel_requested())
        status, ended = results.get(timeout=JOIN_SECONDS)
    finally:
        other.join(timeout=JOIN_SECONDS)
        if other.is_alive():
            other.kill()
            other.join()
    assert (status, ended) == ("working", ["t1"])
    final = asyncio.run(store.get("t1"))
    assert final is not None and final.status == "cancelled" and final.status_message is None


def test_the_task_store_is_bounded_and_frees_finished_tasks_first(tmp_path: Path) -> None:
    store = MachineTaskStore(MachineStore.open(tmp_path), max_count=2, max_bytes=100_000)

    async def run() -> None:
        first, second = new_record("a"), new_record("b")
        await store.create(first)
        await store.create(second)
        with pytest.raises(TaskStoreFull, match="too many tasks"):
            await store.create(new_record("c"))
        first.status = "completed"
        await store.finish(first)
        await store.create(new_record("c"))  # the finished one made room
        assert await store.get("a") is None and await store.get("b") is not None

    asyncio.run(run())


def test_a_record_growing_past_the_stores_bytes_is_refused(tmp_path: Path) -> None:
    store = MachineTaskStore(MachineStore.open(tmp_path), max_count=10, max_bytes=1_000)

    async def run() -> None:
        first, second = new_record("a"), new_record("b")
        await store.create(first)
        await store.create(second)
        second.status_message = "x" * 600  # each fits alone; both together do not, and neither is finished
        with pytest.raises(TaskStoreFull):
            await store.put(second)
        kept = await store.get("b")
        assert kept is not None and kept.status_message is None
        first.status = "completed"
        await store.finish(first)
        await store.put(second)  # the finished one made room
        kept = await store.get("b")
        assert kept is not None and kept.status_message == "x" * 600 and await store.get("a") is None

    asyncio.run(run())
