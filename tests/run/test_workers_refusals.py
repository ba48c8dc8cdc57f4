"""What cannot run on several workers is refused at start, with the way that can."""

from __future__ import annotations

import subprocess
import sys

import pytest
from apcore import Registry

from apcore_mcp import BackgroundServer, serve
from apcore_mcp.settings import Settings
from apcore_mcp.settings.replicas import usable_cpus

from tests._support.deploy import REPO, clean_env
from tests._support.replicas import EXTENSIONS


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(EXTENSIONS), *args]
    return subprocess.run(argv, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("transport", ["stdio", "sse"])
def test_the_cli_refuses_workers_on_a_one_process_transport(transport: str) -> None:
    done = cli("--transport", transport, "--workers", "2")
    assert done.returncode == 1, done
    assert f"--workers above 1 needs --transport streamable-http, not {transport}" in done.stderr


@pytest.mark.parametrize("value", ["0", "-1", "two", "257"])
def test_a_worker_count_that_is_not_one_is_named(value: str) -> None:
    done = cli("--transport", "streamable-http", "--workers", value)
    assert done.returncode == 1, done
    assert "--workers: workers must be a whole number from 1 to 256, or auto" in done.stderr


def test_auto_is_the_usable_cpus() -> None:
    assert Settings(workers="auto").workers == usable_cpus()  # type: ignore[arg-type]  # made a count


def test_serve_and_background_server_run_one_process_and_say_what_runs_more() -> None:
    with pytest.raises(ValueError, match=r"workers=2: serve\(\) serves in this one process.*apcore-mcp --workers N"):
        serve(Registry(), transport="streamable-http", workers=2)
    with pytest.raises(ValueError, match="workers=3: BackgroundServer serves in this one process"):
        BackgroundServer(Registry(), workers=3)


def test_several_workers_serve_handshake_clients_stateless() -> None:
    assert Settings(workers=2).stateless and not Settings(workers=2).keeps_stream_events
    assert not Settings().stateless
