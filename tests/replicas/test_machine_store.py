"""The workers' SQLite store (``replicas/machine``) raced by real processes on one database.

Each case starts processes with ``multiprocessing`` (spawn, as uvicorn's workers), lets them act
on one store at the same moment (a barrier), and reads what each got; every process is joined,
or killed past its deadline.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from apcore_mcp._hosts import supervisor_key
from apcore_mcp.calls.limits import MemoryBuckets
from apcore_mcp.calls.used_approvals import UsedApprovalsUnavailable
from apcore_mcp.replicas.machine.approvals import MachineUsedApprovals
from apcore_mcp.replicas.machine.buckets import MachineBuckets
from apcore_mcp.replicas.machine.store import MachineStore, private_directory
from apcore_mcp.replicas.machine.tasks import MachineTaskStore
from apcore_mcp.settings.replicas import usable_cpus
from apcore_mcp.tasks.records import TaskRecord, TaskStoreUnavailable

PROCESSES = 4
JOIN_SECONDS = 20.0
CONTEXT = multiprocessing.get_context("spawn")


def race(target: Callable[..., None], directory: Path, count: int = PROCESSES, *args: Any) -> list[Any]:
    """Run ``target(directory, barrier, results, *args)`` in ``count`` processes at once; what they put."""
    barrier = CONTEXT.Barrier(count)
    results = CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=reporting, args=(target, directory, barrier, results, *args)) for _ in range(count)
    ]
    for process in processes:
        process.start()
    try:
        found = [results.get(timeout=JOIN_SECONDS) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=JOIN_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()
    return found


def reporting(target: Callable[..., None], directory: Path, barrier: Any, results: Any, *args: Any) -> None:
    """``target``, its error put as its result (the test then fails at once, saying it)."""
    try:
        target(directory, barrier, results, *args)
    except BaseException as exc:
        barrier.abort()
        results.put(f"{type(exc).__name__}: {exc}")
        raise


def claim_once(directory: Path, barrier: Any, results: Any) -> None:
    store = MachineStore.open(directory)
    store.one("SELECT count(*) FROM approvals")  # in use, as a serving worker's connection is
    # What a worker does besides: a second connection opened and closed in the same process
    # (the start-up's key and announcement) must leave this one on the shared database.
    MachineStore.open(directory).close()
    barrier.wait()
    results.put(asyncio.run(MachineUsedApprovals(store).claim(b"d" * 32, 60)))


def take_tokens(directory: Path, barrier: Any, results: Any, takes: int) -> None:
    buckets = MachineBuckets(MachineStore.open(directory))
    barrier.wait()

    async def all_takes() -> int:
        return sum([await buckets.take("caller", 0.001, 5, 0.0) == 0.0 for _ in range(takes)])

    results.put(asyncio.run(all_takes()))


def make_secret(directory: Path, barrier: Any, results: Any) -> None:
    store = MachineStore.open(directory)
    barrier.wait()
    results.put(store.shared_secret("key", lambda: os.urandom(16).hex()))


def first_to_say(directory: Path, barrier: Any, results: Any) -> None:
    store = MachineStore.open(directory)
    barrier.wait()
    results.put(store.first("announced"))


def open_new(directory: Path, barrier: Any, results: Any, rounds: int) -> None:
    """Every process opens each new database at once: it is created and switched to WAL by one."""
    for round_ in range(rounds):
        barrier.wait(timeout=JOIN_SECONDS)
        MachineStore.open(directory / str(round_)).close()
    results.put("opened")


def fork_after_use(directory: Path, barrier: Any, results: Any) -> None:
    """A process forked from one using a store (a pre-forking server) uses a connection of its own."""
    store = MachineStore.open(directory)
    approvals = MachineUsedApprovals(store)
    asyncio.run(approvals.claim(b"p" * 32, 60))
    inherited = store.connection
    pid = os.fork()
    if pid == 0:  # the child: only os._exit leaves it (no test machinery runs here)
        fine = store.connection is not inherited
        fine = fine and asyncio.run(approvals.claim(b"c" * 32, 60)) and not asyncio.run(approvals.claim(b"p" * 32, 60))
        store.close()
        os._exit(0 if fine else 1)
    _, status = os.waitpid(pid, 0)
    child = os.waitstatus_to_exitcode(status)
    results.put((child, asyncio.run(approvals.claim(b"c" * 32, 60)), store.connection is inherited))


def test_one_process_of_many_gets_an_approval(tmp_path: Path) -> None:
    assert sorted(race(claim_once, tmp_path)) == [False] * (PROCESSES - 1) + [True]


def test_a_burst_taken_by_several_processes_is_one_bucket(tmp_path: Path) -> None:
    assert sum(race(take_tokens, tmp_path, 2, 6)) == 5  # burst 5, nearly no refill: 5 of 12 takes


def test_every_process_gets_the_secret_the_first_made(tmp_path: Path) -> None:
    values = race(make_secret, tmp_path)
    assert len(set(values)) == 1 and len(values[0]) == 32


def test_one_process_is_first(tmp_path: Path) -> None:
    assert sorted(race(first_to_say, tmp_path)) == [False] * (PROCESSES - 1) + [True]


def test_an_approval_expires_and_a_full_record_refuses(tmp_path: Path) -> None:
    clock = [100.0]
    record = MachineUsedApprovals(MachineStore.open(tmp_path), max_entries=2, clock=lambda: clock[0])

    async def run() -> None:
        assert await record.claim(b"a", 5) and not await record.claim(b"a", 5)
        assert await record.claim(b"b", 5)
        with pytest.raises(UsedApprovalsUnavailable):
            await record.claim(b"c", 5)
        clock[0] += 6  # both expired: room again, and "a" may be claimed anew
        assert await record.claim(b"a", 5) and await record.claim(b"c", 5)

    asyncio.run(run())


def test_many_processes_create_one_new_database_at_once(tmp_path: Path) -> None:
    rounds = 12
    for round_ in range(rounds):
        (tmp_path / str(round_)).mkdir()
    assert race(open_new, tmp_path, PROCESSES, rounds) == ["opened"] * PROCESSES


def test_a_forked_process_opens_its_own_connection(tmp_path: Path) -> None:
    # The child's claims succeed on its own connection; the parent's connection still works after.
    assert race(fork_after_use, tmp_path, 1) == [(0, False, True)]


def test_a_store_locked_past_its_timeout_fails_closed_or_falls_back(tmp_path: Path) -> None:
    store, holder = MachineStore.open(tmp_path), MachineStore.open(tmp_path)
    store.connection.execute("PRAGMA busy_timeout = 20")
    tasks = MachineTaskStore(store, max_count=10, max_bytes=100_000)
    fallback = MemoryBuckets()

    async def run() -> None:
        with holder.writing():  # another worker stuck inside a transaction
            with pytest.raises(UsedApprovalsUnavailable, match="store failed"):
                await MachineUsedApprovals(store).claim(b"d" * 32, 60)
            with pytest.raises(TaskStoreUnavailable, match="store failed"):
                await tasks.create(TaskRecord(task_id="t", owner="o", tool="t", ttl_ms=60_000, poll_ms=100))
            with pytest.raises(sqlite3.OperationalError):
                await MachineBuckets(store).take("caller", 1.0, 1, 0.0)
            buckets = MachineBuckets(store, fallback)
            assert await buckets.take("caller", 0.001, 1, 0.0) == 0.0  # this worker's own bucket
            assert await fallback.take("caller", 0.001, 1, 0.0) > 0  # ... which the take used
        assert await MachineUsedApprovals(store).claim(b"d" * 32, 60)  # the store is back

    asyncio.run(run())


# -- the directory --------------------------------------------------------------------------------


def test_the_directory_and_database_are_this_users_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    directory = private_directory("supervisor-1")
    assert directory.parent.parent == tmp_path
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(directory.parent.stat().st_mode) == 0o700
    MachineStore.open(directory).close()
    assert stat.S_IMODE((directory / "state.sqlite3").stat().st_mode) == 0o600


def test_a_directory_open_to_others_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    planted = tmp_path / f"apcore-mcp-{os.getuid()}"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)  # another user could have planted a database here
    with pytest.raises(PermissionError, match="open to other users"):
        private_directory("supervisor-1")
    planted.chmod(0o700)
    (planted / "supervisor-1").symlink_to(tmp_path)
    with pytest.raises(PermissionError, match="not a directory of this user"):
        private_directory("supervisor-1")
    (planted / "supervisor-1").unlink()
    (planted / "supervisor-1").mkdir(mode=0o700)
    (planted / "supervisor-1").chmod(0o750)  # readable by the group: it could read the secrets
    with pytest.raises(PermissionError, match="open to other users"):
        private_directory("supervisor-1")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")
def test_a_directory_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    planted = tmp_path / f"apcore-mcp-{os.getuid()}"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, -1)  # nobody's, with the right mode
    with pytest.raises(PermissionError, match="not a directory of this user"):
        private_directory("supervisor-1")


def test_the_directories_of_ended_supervisors_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    live = supervisor_key(os.getpid())
    pid, start, command = live.split("-")
    ended = private_directory(f"{pid}-{int(start) + 1}-{command}")  # this pid, started at another time
    (ended / "state.sqlite3").write_bytes(b"")
    kept = private_directory(live)
    assert kept.is_dir() and not ended.exists()


def test_auto_workers_count_the_cgroups_cpu_quota(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    assert usable_cpus(tmp_path) == affinity  # no quota file: the CPUs it may run on
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(tmp_path) == affinity
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # docker run --cpus 0.5
    assert usable_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text(f"{affinity * 200000} 100000\n")  # a quota above the CPUs
    assert usable_cpus(tmp_path) == affinity
