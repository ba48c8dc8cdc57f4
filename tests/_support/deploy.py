"""Real processes for the deployment tests: child processes stopped by PID, nginx on loopback.

Shared by ``test_deploy.py`` and ``test_replicas_*.py``; nginx runs from a configuration file of
``deploy/`` whose upstream servers and ``listen`` the test points at free 127.0.0.1 ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests._support.processes import stop_process, wait_ok

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKERFILE = REPO / "Dockerfile"
STARTUP_SECONDS = 20


def clean_env() -> dict[str, str]:
    """This process's environment without settings that would leak into a child server."""
    leaky = ("APCORE_MCP_", "FORWARDED_ALLOW_IPS", "UVICORN_")
    return {key: value for key, value in os.environ.items() if not key.startswith(leaky)}


def log_tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


async def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> float | None:
    """Seconds until ``proc`` exits, or None if it is still running after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    return None


@contextlib.contextmanager
def running(cmd: list[str], log: Path, *, env: dict[str, str], cwd: Path = REPO) -> Iterator[subprocess.Popen[bytes]]:
    """``cmd`` as a child process (output to ``log``), stopped by PID on the way out."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            stop_process(proc)


def nginx_binary() -> str:
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if path is None:
        pytest.fail("nginx is not installed: apt-get install -y nginx (scripts/test.sh installs it)")
    return path


def point_nginx_conf(conf: str, listen_port: int, upstreams: Mapping[str, str]) -> str:
    """A ``deploy/`` configuration with ``listen 80;`` on ``127.0.0.1:listen_port`` and each
    ``name:port`` of ``upstreams`` replaced by its loopback address; a ``server NAME...;`` line
    whose replacement is ``""`` is dropped (fewer replicas than the file names)."""
    assert conf.count("listen 80;") == 1
    conf = conf.replace("listen 80;", f"listen 127.0.0.1:{listen_port};")
    lines = []
    for line in conf.splitlines():
        for name, address in upstreams.items():
            if name in line:
                if not address:
                    line = ""
                    break
                line = line.replace(name, address)
        lines.append(line)
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def nginx_running(conf: str, workdir: Path, listen_port: int) -> Iterator[subprocess.Popen[bytes]]:
    """nginx (in the foreground, its own prefix under ``workdir``) serving ``conf``; stopped by PID."""
    prefix = workdir / "nginx"
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "nginx.conf").write_text(conf)
    cmd = [
        nginx_binary(), "-e", "stderr", "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf"),
        "-g", f"daemon off; pid {prefix}/nginx.pid;",
    ]  # fmt: skip
    log = workdir / "nginx.log"
    with running(cmd, log, env=clean_env()) as proc:
        wait_ok(f"http://127.0.0.1:{listen_port}/health", proc, STARTUP_SECONDS, lambda: log_tail(log))
        yield proc


# -- the Dockerfile, parsed --------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    base: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [ins.args for ins in self.instructions if ins.keyword == keyword]

    def last(self, keyword: str) -> str:
        found = self.all(keyword)
        assert found, f"Dockerfile: no {keyword} in the final stage"
        return found[-1]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for args in self.all("ENV"):
            tokens = shlex.split(args)
            if tokens and "=" not in tokens[0]:  # legacy `ENV KEY value with spaces`
                values[tokens[0]] = args.split(None, 1)[1]
                continue
            for token in tokens:
                key, _, value = token.partition("=")
                values[key] = value
        return values


def dockerfile_stages(text: str) -> list[Stage]:
    """The stages of a Dockerfile: continuations joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "Dockerfile ends inside a line continuation"
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            stages.append(Stage(base=args.split()[0]))
        else:
            assert stages, f"Dockerfile: {keyword} before FROM"
            stages[-1].instructions.append(Instruction(keyword, args))
    return stages


def exec_form(args: str, what: str) -> list[str]:
    assert args.startswith("["), f"{what} must be exec form (a JSON array), got: {args}"
    value = json.loads(args)
    assert isinstance(value, list), what
    assert all(isinstance(item, str) for item in value), what
    return value


def final_stage() -> Stage:
    return dockerfile_stages(DOCKERFILE.read_text())[-1]


def option(argv: list[str], name: str) -> str:
    """The value of ``--name value`` or ``--name=value`` in ``argv``."""
    for index, arg in enumerate(argv):
        if arg == name:
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"{name} missing from {argv}")


def image_cmd() -> list[str]:
    return exec_form(final_stage().last("CMD"), "CMD")


def healthcheck_cmd() -> list[str]:
    args = final_stage().last("HEALTHCHECK")
    head, sep, command = args.partition("CMD ")
    assert sep, f"HEALTHCHECK without CMD: {args}"
    assert all(part.startswith("--") for part in head.split()), head
    return exec_form(command.strip(), "HEALTHCHECK CMD")


def image_command(port: int) -> list[str]:
    """The Dockerfile's CMD, bound to 127.0.0.1:``port``, with this venv's executables."""
    cmd = image_cmd()
    cmd[cmd.index("--host") + 1] = "127.0.0.1"
    cmd[cmd.index("--port") + 1] = str(port)
    executable = shutil.which(cmd[0], path=str(Path(sys.executable).parent))
    assert executable, f"{cmd[0]} not installed in {Path(sys.executable).parent}"
    return [executable, *cmd[1:]]


def image_env() -> dict[str, str]:
    """The Dockerfile's ENV, with the image's WORKDIR (/app) mapped to the repository root."""
    stage = final_stage()
    workdir = stage.last("WORKDIR").rstrip("/")
    env = clean_env()
    for key, value in stage.env().items():
        if key == "PATH":
            continue
        env[key] = str(REPO) + value[len(workdir) :] if value.startswith(workdir + "/") else value
    return env
