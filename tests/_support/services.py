"""The service started as operators start it, a process group of its own on a free 127.0.0.1 port.

Three styles: the documented ``uvicorn app:create_app --factory`` command exactly as written in
docs/service.md (its variables and flags; the style is still called ``readme``, where it was first
written), the ``apcore-mcp`` CLI, and the Dockerfile's command and environment.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from apcore_mcp.testing import free_port
from apcore_mcp.testing.harness import stop_process_group

from tests._support.deploy import REPO, clean_env, image_command, image_env
from tests._support.processes import wait_ok

SERVICE_PAGE = REPO / "docs" / "service.md"
"""The page that documents the uvicorn command line (``readme_command`` reads it from there)."""
EXTENSIONS = REPO / "examples" / "extensions"
TOOL = "text.stats"
STYLES = ["readme", "cli", "image"]
STARTUP_SECONDS = 30


# -- the service, started as documented --------------------------------------------------------


def documented_command(needle: str, *, workers: bool = False) -> tuple[dict[str, str], list[str]]:
    """The variables and the argv of the one command line of docs/service.md's bash blocks holding
    ``needle`` (``workers``: the one running several workers, else the one that does not)."""
    blocks = re.findall(r"```(?:bash|sh|shell)\n(.*?)```", SERVICE_PAGE.read_text(), re.DOTALL)
    lines = [
        line for block in blocks for line in block.splitlines() if needle in line and ("--workers" in line) == workers
    ]
    assert len(lines) == 1, f"{SERVICE_PAGE.name}: expected one {needle!r} command line in a bash block, found {lines}"
    words = shlex.split(lines[0])
    variables: dict[str, str] = {}
    while "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        variables[name] = value
    return variables, words


def readme_command() -> tuple[dict[str, str], list[str]]:
    """The variables and the argv of the documented ``uvicorn app:create_app --factory`` command line."""
    return documented_command("uvicorn app:create_app --factory")


def _set_option(argv: list[str], name: str, value: str) -> None:
    for index, arg in enumerate(argv):
        if arg == name:
            argv[index + 1] = value
            return
        if arg.startswith(name + "="):
            argv[index] = f"{name}={value}"
            return
    argv += [name, value]


def launch(
    style: str, port: int, settings: Mapping[str, str], extra: Sequence[str] = ()
) -> tuple[list[str], dict[str, str]]:
    """``(argv, env)`` starting the service the ``style`` way on 127.0.0.1:``port``.

    ``readme``: the command line of docs/service.md; ``cli``: ``apcore-mcp``; ``image``: the Dockerfile's
    CMD and ENV, run from the repository root as the image runs them from ``/app``.
    """
    env = {**clean_env(), "APCORE_MCP_EXTENSIONS_DIR": str(EXTENSIONS), **settings}
    if style == "image":
        return [*image_command(port), *extra], {**image_env(), **settings}
    if style == "readme":
        variables, argv = readme_command()
        executable = Path(sys.executable).parent / Path(argv[0]).name  # .venv/bin/uvicorn, this venv's
        argv = [str(executable), *argv[1:]]
        _set_option(argv, "--host", "127.0.0.1")
        _set_option(argv, "--port", str(port))
        return [*argv, *extra], {**env, **variables, **settings}
    argv = [sys.executable, "-m", "apcore_mcp", "--transport", "streamable-http", "--host", "127.0.0.1"]
    return [*argv, "--port", str(port), *extra], env


@contextlib.contextmanager
def service(
    style: str, log: Path, settings: Mapping[str, str], extra: Sequence[str] = ()
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The service as a process group of its own (stdout and stderr to ``log``), stopped by its PID."""
    port = free_port()
    argv, env = launch(style, port, settings, extra)
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{url}/health", proc, STARTUP_SECONDS, lambda: log.read_text(errors="replace"))
        assert proc.poll() is None, "another process answered on the port:\n" + log.read_text(errors="replace")
        yield url, proc
    finally:
        stop_process_group(proc)
