"""Child processes of the tests: stopped by PID, polled until they answer."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM by PID, wait ``timeout``, then SIGKILL (and wait again)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def wait_ok(
    url: str, proc: subprocess.Popen[Any], timeout: float = 20.0, details: Callable[[], str] = lambda: ""
) -> httpx.Response:
    """Poll ``url`` until it answers 200; fail early, with ``details()``, if the process dies."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{program(proc)} exited with {proc.returncode} before {url} answered:\n{details()}")
        try:
            response = httpx.get(url, timeout=1.0)
            if response.status_code == 200:
                return response
            last = response.status_code
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.05)
    pytest.fail(f"{url} not 200 within {timeout}s (last: {last!r}):\n{details()}")


def program(proc: subprocess.Popen[Any]) -> str:
    """The program a child process runs: the first word of its command."""
    args = proc.args
    return os.fsdecode(args if isinstance(args, str | bytes | os.PathLike) else args[0])
