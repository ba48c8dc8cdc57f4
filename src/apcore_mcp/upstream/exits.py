"""Why a stdio upstream went away, in one line: its command, its exit code and the end of its stderr.

``ProcessTrace`` is filled by the stdio transport: every stderr chunk passes through it on its
way to the server's log (only the last ``TAIL_BYTES`` are kept), and the exit code is set once
the process is reaped. It is rendered two ways. ``exit_detail`` is for the log and the
server-side error of a call: the command line and each stderr line go through ``redact`` (the
config's expanded values and the project's secret patterns), environment values are never
part of it, and the whole is bounded (``SHOWN_LINES`` lines of at most ``LINE_CHARS``
characters, a command of at most ``COMMAND_CHARS``). ``exit_reason`` is for ``/ready``, which
anyone may read: the exit code only, since redaction cannot know every path, host, database or
user name a stderr line may hold.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

TAIL_BYTES = 4096
SHOWN_LINES = 5
LINE_CHARS = 200
COMMAND_CHARS = 160


class ProcessTrace:
    """The end of one process's stderr (bounded in bytes) and, once reaped, its exit code."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self._limit = limit
        self._tail = bytearray()
        self.returncode: int | None = None

    def feed(self, chunk: bytes) -> None:
        self._tail += chunk
        if len(self._tail) > self._limit:
            del self._tail[: len(self._tail) - self._limit]

    def last_lines(self, count: int = SHOWN_LINES) -> list[str]:
        lines = self._tail.decode("utf-8", errors="replace").splitlines()
        if len(self._tail) >= self._limit and lines:
            lines = lines[1:]  # the first one was cut by the bound
        return [_cut(line.strip(), LINE_CHARS) for line in lines if line.strip()][-count:]


def exit_reason(trace: ProcessTrace) -> str:
    """``exited with code 3``, nothing the process wrote (``""`` before it exited)."""
    return "" if trace.returncode is None else f"exited with code {trace.returncode}"


def exit_detail(command: str, args: Sequence[str], trace: ProcessTrace, redact: Callable[[str], str]) -> str:
    """``command `python -c ...` exited with code 3; last stderr lines: a | b`` (``""`` before it exited)."""
    if trace.returncode is None:
        return ""
    line = _cut(redact(_one_line(shlex.join([command, *args]))), COMMAND_CHARS)
    text = f"command `{line}` {exit_reason(trace)}"
    lines = [redact(entry) for entry in trace.last_lines()]
    if lines:
        text += "; last stderr lines: " + " | ".join(lines)
    else:
        text += "; nothing on stderr"
    return text


def _one_line(text: str) -> str:
    """Control characters (the newlines of a ``-c`` script) escaped: the detail stays one log line."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
