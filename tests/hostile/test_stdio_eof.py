"""A stdio client that writes its requests and closes stdin at once gets every answer, in bounded time.

Each test runs the server as a real subprocess and hands it all its lines in one write followed
by EOF (``subprocess.run(input=...)``): the requests still being worked on when stdin closes are
answered before the server exits. Where EOF meets an interactive tool (its question can no longer
be answered) the call fails cleanly at once; where it meets a cancellation, the cancelled call
gets no answer (as MCP says) and the server does not wait for one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests._support.hostile import REPO

SHUTDOWN_TIMEOUT = 20.0
"""The drain's bound; every test below must end well before it."""


def initialize(**capabilities: Any) -> list[dict[str, Any]]:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    return [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def call(request_id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def closing_at_once(
    messages: list[dict[str, Any]], stdin_file: Path | None = None
) -> tuple[dict[Any, dict[str, Any]], float, str]:
    """Answers by id, the seconds until the server exited, and its log, for ``messages`` then EOF.

    Through a pipe, or with ``stdin_file`` from that file (which the event loop cannot watch, so
    the server reads it another way). The server shows its ResourceWarnings, and must have none.
    """
    lines = "".join(json.dumps(message) + "\n" for message in messages)
    command = [sys.executable, "-W", "always::ResourceWarning", "-m", "tests.servers.eof_stdio", str(SHUTDOWN_TIMEOUT)]
    started = time.monotonic()
    if stdin_file is None:
        run = subprocess.run(
            command, input=lines, capture_output=True, text=True, timeout=SHUTDOWN_TIMEOUT + 30, cwd=REPO
        )
    else:
        stdin_file.write_text(lines)
        with stdin_file.open() as stdin:
            run = subprocess.run(
                command, stdin=stdin, capture_output=True, text=True, timeout=SHUTDOWN_TIMEOUT + 30, cwd=REPO
            )
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert "ResourceWarning" not in run.stderr, run.stderr
    answers = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return {answer.get("id"): answer for answer in answers}, elapsed, run.stderr


def done(answer: dict[str, Any]) -> bool:
    result = answer.get("result") or {}
    return result.get("structuredContent") == {"done": True} and not result.get("isError")


def test_every_request_read_before_eof_is_answered(tmp_path: Path) -> None:
    calls = [call(i, "eof.sleep", seconds=0.2 + 0.1 * i, marker=str(tmp_path / f"m{i}")) for i in range(1, 7)]
    answers, elapsed, _log = closing_at_once([*initialize(), *calls])
    assert sorted(answers, key=str) == [0, 1, 2, 3, 4, 5, 6]
    assert all(done(answers[i]) for i in range(1, 7)), answers
    assert elapsed < SHUTDOWN_TIMEOUT / 2


def test_a_question_that_can_no_longer_be_answered_fails_its_call_at_once(tmp_path: Path) -> None:
    messages = [
        *initialize(elicitation={}),
        call(1, "eof.ask"),
        call(2, "eof.sleep", seconds=0.5, marker=str(tmp_path / "m")),
    ]
    answers, elapsed, _log = closing_at_once(messages)
    assert sorted(answers, key=str) == [0, 1, 2], answers
    asked = answers[1]["result"]
    assert asked.get("isError") or asked.get("structuredContent") == {"answer": None}, asked  # no name invented
    assert done(answers[2])
    assert elapsed < SHUTDOWN_TIMEOUT / 2  # not waiting for an answer that cannot come


def test_a_call_cancelled_before_eof_gets_no_answer_and_is_not_waited_for(tmp_path: Path) -> None:
    slow, quick = tmp_path / "slow", tmp_path / "quick"
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "changed mind"},
    }
    messages = [
        *initialize(),
        call(1, "eof.sleep", seconds=60, marker=str(slow)),
        call(2, "eof.sleep", seconds=0.5, marker=str(quick)),
        cancel,
    ]
    answers, elapsed, _log = closing_at_once(messages)
    assert sorted(answers, key=str) == [0, 2], answers
    assert done(answers[2]) and quick.exists() and not slow.exists()
    assert elapsed < SHUTDOWN_TIMEOUT / 2


def test_requests_from_a_file_are_all_answered(tmp_path: Path) -> None:
    """``apcore-mcp < requests.jsonl``: a file cannot be watched by the event loop (epoll refuses it)."""
    calls = [call(i, "eof.sleep", seconds=0.1, marker=str(tmp_path / f"m{i}")) for i in range(1, 4)]
    answers, elapsed, _log = closing_at_once([*initialize(), *calls], stdin_file=tmp_path / "requests.jsonl")
    assert sorted(answers, key=str) == [0, 1, 2, 3], answers
    assert all(done(answers[i]) for i in range(1, 4)), answers
    assert elapsed < SHUTDOWN_TIMEOUT / 2


def test_stdin_from_the_null_device_ends_the_server_at_once() -> None:
    """``apcore-mcp < /dev/null`` (a cron job, a CI step): EOF at once, not a server left reading nothing."""
    started = time.monotonic()
    with open(os.devnull) as stdin:
        run = subprocess.run(
            [sys.executable, "-W", "always::ResourceWarning", "-m", "tests.servers.eof_stdio", str(SHUTDOWN_TIMEOUT)],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=SHUTDOWN_TIMEOUT + 30,
            cwd=REPO,
        )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "ResourceWarning" not in run.stderr, run.stderr
    assert time.monotonic() - started < SHUTDOWN_TIMEOUT / 2
