"""``_hosts.hosted_workers``: what uvicorn and gunicorn, run for real, tell an app about their workers.

A factory in a module of its own records, in each worker, what ``hosted_workers()`` found while
uvicorn or gunicorn built the app; the test reads every worker's record. This is the private API
of two servers (``_hosts.py``): when a release moves it, these tests say so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from apcore_mcp._hosts import hosted_workers, supervisor_gone, supervisor_key
from apcore_mcp.testing import free_port
from apcore_mcp.testing.harness import stop_process_group

from tests._support.deploy import clean_env

START_SECONDS = 30.0

FACTORY = textwrap.dedent(
    """
    import os
    from pathlib import Path

    from apcore_mcp._hosts import hosted_workers, supervisor_gone, supervisor_key


    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})


    def create_app():
        # Written whole, then renamed: the test counts records while workers write them.
        record = Path(os.environ["HOSTS_RECORD"]) / str(os.getpid())
        partial = record.with_name(record.name + ".partial")
        partial.write_text(f"{hosted_workers()} {supervisor_key()}")
        os.replace(partial, record)
        return app
    """
)


def records_of(argv: list[str], workdir: Path, expected: int) -> list[str]:
    """Run ``argv`` (a server of the factory) until ``expected`` workers wrote their record."""
    (workdir / "hostsapp.py").write_text(FACTORY)
    records = workdir / "records"
    records.mkdir()
    env = {**clean_env(), "HOSTS_RECORD": str(records), "PYTHONPATH": str(workdir)}
    log = workdir / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            argv, cwd=workdir, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while len(written(records)) < expected and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text(errors="replace")
            time.sleep(0.1)
        found = sorted(path.read_text() for path in written(records))
        assert len(found) == expected, log.read_text(errors="replace")
        return [*found, str(proc.pid)]
    finally:
        stop_process_group(proc)


def written(records: Path) -> list[Path]:
    return [path for path in records.iterdir() if not path.name.endswith(".partial")]


def tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def test_uvicorn_workers_are_counted_and_share_their_supervisor(tmp_path: Path) -> None:
    argv = [tool("uvicorn"), "hostsapp:create_app", "--factory", "--workers", "2", "--port", str(free_port())]
    *found, supervisor = records_of(argv, tmp_path, 2)
    counts = {record.split()[0] for record in found}
    keys = {record.split()[1] for record in found}
    assert counts == {"2"}
    assert len(keys) == 1 and keys.pop().startswith(f"{supervisor}-")  # both name the uvicorn parent


def test_gunicorn_workers_are_counted_and_share_their_arbiter(tmp_path: Path) -> None:
    port = free_port()
    argv = [tool("gunicorn"), "hostsapp:create_app()", "-k", "uvicorn_worker.UvicornWorker", "-w", "3"]
    *found, arbiter = records_of([*argv, "-b", f"127.0.0.1:{port}"], tmp_path, 3)
    assert {record.split()[0] for record in found} == {"3"}
    assert {record.split()[1].partition("-")[0] for record in found} == {arbiter}


def test_one_uvicorn_process_counts_one(tmp_path: Path) -> None:
    argv = [tool("uvicorn"), "hostsapp:create_app", "--factory", "--port", str(free_port())]
    (found, _supervisor) = records_of(argv, tmp_path, 1)
    assert found.split()[0] == "1"


def test_outside_any_server_it_is_one() -> None:
    assert hosted_workers() == 1


@pytest.mark.parametrize("pid", [None, 1])
def test_a_supervisor_key_names_the_pid_its_start_and_its_command(pid: int | None) -> None:
    key = supervisor_key(pid)
    number, start, command = key.split("-")
    assert int(number) == (pid if pid is not None else os.getppid())
    assert start.isdigit() and len(command) == 16
    assert not supervisor_gone(key)


def test_a_supervisor_that_ended_or_whose_pid_was_reused_is_gone(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ended = int(done.stdout)
    assert supervisor_gone(f"{ended}-123-abc")
    pid, start, _command = supervisor_key(os.getpid()).split("-")
    assert supervisor_gone(f"{pid}-{int(start) + 1}-abc")  # this pid, another start: a recycled pid
    assert not supervisor_gone("not-a-key")
