"""The explorer's generated execute token across workers: one token for every worker of a
supervisor (a call the page makes may reach any of them), made once, in their private store."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from apcore_mcp.http.app import explorer_token
from apcore_mcp.http.explorer.page import ExecuteGate
from apcore_mcp.settings import Settings


def executing(workers: int = 1, execute_token: str | None = None) -> Settings:
    return Settings(workers=workers, explorer=True, allow_execute=True, execute_token=execute_token)


def token_in_a_worker(runtime: str, queue: multiprocessing.Queue[str | None]) -> None:
    import os

    os.environ["XDG_RUNTIME_DIR"] = runtime
    queue.put(explorer_token(executing(workers=2)))


def test_every_worker_of_a_supervisor_gets_the_same_token(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[str | None] = context.Queue()
    workers = [context.Process(target=token_in_a_worker, args=(str(tmp_path), queue)) for _ in range(2)]
    for worker in workers:
        worker.start()
    try:
        tokens = {queue.get(timeout=30) for _ in workers}
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
    (token,) = tokens
    assert token is not None and len(token) >= 32
    gate = ExecuteGate(executing(workers=2), made=token)
    assert gate.token == token


@pytest.mark.parametrize(
    "settings",
    [executing(), Settings(workers=2), executing(workers=2, execute_token="t" * 16)],
    ids=["one process", "no execution", "a configured token"],
)
def test_no_machine_token_where_none_is_needed(settings: Settings) -> None:
    assert explorer_token(settings) is None
