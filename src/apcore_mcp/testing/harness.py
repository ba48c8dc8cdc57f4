"""Starting an MCP server for a test, knowing when it is ready, and stopping it for sure.

A ``ServerCommand`` says how to start a server; its arguments may hold the placeholders
``{transport}``, ``{host}``, ``{port}`` and ``{record}`` (a JSON lines file for the request
record). ``start_server()`` runs it on one transport and returns a ``RunningServer`` once the
server answers:

- ``memory``: no process. An ``apcore_server`` or ``scripted_server`` command is built in the
  test's own process and served over the SDK's in-memory streams (``testing.memory``); ready
  once built. Its ``pid``, ``url`` and ``base_url`` are ``None``; ``params`` is refused.
- ``streamable-http`` and ``sse``: a subprocess on a free port, ready on ``GET /health`` (or,
  for a server without one, a completed ``initialize``);
- ``stdio``: ready once a probe process completed a handshake (each client starts its own).

Every process runs in its own process group; stopping sends SIGTERM to the group, waits, then
SIGKILLs what is left. An ``atexit`` hook stops whatever a crashed test run left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from apcore_mcp.testing import clients
from apcore_mcp.testing.memory import MemoryServer, start_memory

Transport = Literal["memory", "stdio", "streamable-http", "sse"]
TRANSPORTS: tuple[Transport, ...] = ("memory", "stdio", "streamable-http", "sse")
DEFAULT_READY_TIMEOUT = 30.0
STOP_GRACE_SECONDS = 5.0
_OUTPUT_TAIL = 8_000


class ServerNotReady(RuntimeError):
    """The server did not become ready; the message carries its command and its output."""


@dataclass(frozen=True)
class ServerCommand:
    """How to start an MCP server (see the module docstring for the placeholders).

    ``kind``: ``apcore`` or ``scripted`` (ours, which the ``memory`` transport builds in process)
    or ``command`` (any other, run as a process only).
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    mcp_path: str = "/mcp"
    sse_path: str = "/sse"
    health_path: str | None = "/health"
    kind: Literal["apcore", "scripted", "command"] = "command"

    def render(self, *, transport: str, host: str, port: int, record: Path) -> list[str]:
        values = {"{transport}": transport, "{host}": host, "{port}": str(port), "{record}": str(record)}
        rendered = []
        for arg in self.argv:
            for placeholder, value in values.items():
                arg = arg.replace(placeholder, value)
            rendered.append(arg)
        return rendered


def command_server(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    mcp_path: str = "/mcp",
    sse_path: str = "/sse",
    health_path: str | None = None,
) -> ServerCommand:
    """Any server command, run as a process (not on ``memory``). Without ``health_path``
    readiness means a completed ``initialize``."""
    return ServerCommand(
        tuple(argv), tuple(sorted((env or {}).items())), str(cwd) if cwd else None, mcp_path, sse_path, health_path
    )


def apcore_server(extensions_dir: str | Path, *args: str, env: Mapping[str, str] | None = None) -> ServerCommand:
    """Our CLI serving an apcore extensions directory (``python -m apcore_mcp``); ``args`` are its
    flags. In memory they are parsed by the same parser, and only ``APCORE_MCP_*`` ``env`` applies."""
    argv = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(Path(extensions_dir).resolve())]
    argv += ["--transport", "{transport}", "--host", "{host}", "--port", "{port}", "--log-level", "WARNING", *args]
    return ServerCommand(tuple(argv), tuple(sorted((env or {}).items())), kind="apcore")


def scripted_server(script: str | Path, *args: str, env: Mapping[str, str] | None = None) -> ServerCommand:
    """The scripted server playing ``script``, recording requests for ``RunningServer.requests()``."""
    argv = [sys.executable, "-m", "apcore_mcp.testing.scripted", str(Path(script).resolve())]
    argv += ["--transport", "{transport}", "--host", "{host}", "--port", "{port}", "--record", "{record}", *args]
    return ServerCommand(tuple(argv), tuple(sorted((env or {}).items())), kind="scripted")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningServer:
    """A ready server and the ways to reach it.

    In memory (``transport == "memory"``) there is no process and no address: ``pid``, ``url``
    and ``base_url`` are ``None``, ``params`` and ``mcp_servers_entry`` raise ``ValueError``;
    ``client()``, ``output()`` (its log records), ``requests()`` and ``stop()`` work as for the others.
    """

    transport: str
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    workdir: Path
    url: str | None = None
    base_url: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    memory: MemoryServer | None = field(default=None, repr=False)
    """The in-process server (``memory`` transport only)."""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        """Not stopped: its process (if it has one) runs, its in-memory server (if it is one) is open."""
        if self.memory is not None:
            return not self.memory.closed
        return self.process is None or self.process.poll() is None

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    @property
    def record_path(self) -> Path:
        return self.workdir / "requests.jsonl"

    @property
    def params(self) -> dict[str, Any]:
        """``{"command", "args", "env"}`` (stdio; also ``cwd`` when set) or ``{"url"}`` (HTTP, SSE).

        Raises:
            ValueError: in memory, where no other process can reach the server.
        """
        if self.transport == "memory":
            raise ValueError("a server in memory has no connection parameters: use 'stdio' or 'streamable-http'")
        if self.transport != "stdio":
            return {"url": self.url}
        params: dict[str, Any] = {"command": self.argv[0], "args": self.argv[1:], "env": dict(self.env)}
        if self.cwd:
            params["cwd"] = self.cwd
        return params

    def mcp_servers_entry(self, name: str = "server") -> dict[str, Any]:
        """An ``mcpServers`` configuration as MCP hosts read it (``type``: stdio, http or sse)."""
        params = self.params  # refused in memory
        kind = {"stdio": "stdio", "streamable-http": "http", "sse": "sse"}[self.transport]
        return {"mcpServers": {name: {"type": kind, **params}}}

    def client(self, era: str = "legacy", **options: Any) -> contextlib.AbstractAsyncContextManager[Any]:
        """A connected ``mcp.Client`` (``async with``); ``era``: ``legacy`` (2025-11-25 handshake)
        or ``modern`` (2026-07-28 where the server speaks it). ``options`` go to ``mcp.Client``."""
        if self.memory is not None:
            return self.memory.client(era, **options)
        return clients.connect(self.transport, self.url or "", self.params, era=era, **options)

    def output(self) -> str:
        """What the server process wrote to stdout and stderr (the last part); in memory, the log
        records emitted for this server (as far as the logging configuration passes them: WARNING
        and above by default)."""
        if self.memory is not None:
            return self.memory.output()
        return _tail(self.log_path)

    def requests(self, method: str | None = None, test_case: str | None = None) -> list[dict[str, Any]]:
        """The scripted server's request record (from its ``--record {record}`` file)."""
        return clients.read_record(self.record_path, method=method, test_case=test_case)

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process)
        if self.memory is not None:
            self.memory.close()


def start_server(
    command: ServerCommand,
    transport: str,
    workdir: Path,
    *,
    host: str = "127.0.0.1",
    timeout: float = DEFAULT_READY_TIMEOUT,
) -> RunningServer:
    """Start ``command`` on ``transport`` and return once it is ready.

    Raises:
        ServerNotReady: it exited, or did not answer within ``timeout`` seconds (in memory: its
            arguments, extensions or script were refused).
        ValueError: an unknown transport; on ``memory``, a command that is not ours or an ``env``
            that only a process of its own would see.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"Unknown transport {transport!r}: expected one of {', '.join(TRANSPORTS)}")
    workdir.mkdir(parents=True, exist_ok=True)
    if transport == "memory":
        memory = start_memory(command, workdir)
        return RunningServer(transport, list(command.argv), dict(command.env), command.cwd, workdir, memory=memory)
    port = free_port(host)  # stdio servers get one too: some CLIs check the flag whatever the transport
    argv = command.render(transport=transport, host=host, port=port, record=workdir / "requests.jsonl")
    env = dict(command.env)
    server = RunningServer(transport, argv, env, command.cwd, workdir)
    if transport == "stdio":
        _probe_stdio(server, timeout)
        return server
    path = command.mcp_path if transport == "streamable-http" else command.sse_path
    server.base_url = f"http://{host}:{port}"
    server.url = server.base_url + path
    server.process = spawn(argv, env=env, cwd=command.cwd, log=server.log_path)
    try:
        _wait_http(server, command.health_path, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def remote_server(
    url: str, transport: str = "streamable-http", *, workdir: Path | None = None, timeout: float = DEFAULT_READY_TIMEOUT
) -> RunningServer:
    """A server someone else runs, at ``url``: checked with a handshake, never stopped by us.
    It has no request record of ours (``requests()`` is empty).

    Raises:
        ServerNotReady: no completed handshake within ``timeout`` seconds.
    """
    workdir = workdir or Path(tempfile.mkdtemp(prefix="apcore-mcp-remote-"))
    server = RunningServer(transport, [], {}, None, workdir, url=url)
    try:
        clients.probe(transport, url, server.params, timeout=timeout)
    except clients.ProbeFailed as exc:
        raise ServerNotReady(f"MCP server at {url} did not complete a handshake: {exc}") from None
    return server


def spawn(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, log: Path) -> subprocess.Popen[bytes]:
    """``argv`` in a new process group (session), output to ``log``, tracked until stopped."""
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603  # the test author's own command
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
            cwd=cwd,
            start_new_session=True,
        )
    with _LIVE_LOCK:
        _LIVE[process.pid] = process
    return process


def stop_process_group(process: subprocess.Popen[bytes], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM the process group, wait ``grace`` seconds, then SIGKILL the group; idempotent."""
    pgid = process.pid  # the leader of its own session: its pid is the group id
    _signal_group(pgid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(pgid, signal.SIGKILL)
        process.wait(timeout=grace)
    # Children that outlived the leader (a server forking workers) go too.
    _signal_group(pgid, signal.SIGKILL)
    with _LIVE_LOCK:
        _LIVE.pop(process.pid, None)


def is_running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting for its parent to reap it counts as stopped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_leftovers() -> None:
    with _LIVE_LOCK:
        leftovers = list(_LIVE.values())
    for process in leftovers:
        stop_process_group(process, grace=1.0)


def _wait_http(server: RunningServer, health_path: str | None, timeout: float) -> None:
    assert server.process is not None
    assert server.base_url is not None
    assert server.url is not None
    deadline = time.monotonic() + timeout
    last: object = "no answer yet"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerNotReady(_report(server, f"exited with code {server.process.returncode} before it was ready"))
        try:
            if health_path is not None:
                with urllib.request.urlopen(server.base_url + health_path, timeout=2.0) as response:  # noqa: S310
                    if response.status == 200:
                        return
                    last = f"{health_path} answered {response.status}"
            else:
                clients.probe(server.transport, server.url, server.params, timeout=min(5.0, timeout))
                return
        except (urllib.error.URLError, OSError, clients.ProbeFailed) as exc:
            last = exc
        time.sleep(0.1)
    what = f"GET {health_path}" if health_path else "an initialize handshake"
    raise ServerNotReady(_report(server, f"did not answer {what} within {timeout:g}s (last: {last})"))


def _probe_stdio(server: RunningServer, timeout: float) -> None:
    try:
        clients.probe("stdio", "", server.params, timeout=timeout, errlog=server.log_path)
    except clients.ProbeFailed as exc:
        raise ServerNotReady(
            _report(server, f"did not complete the stdio handshake within {timeout:g}s ({exc})")
        ) from None


def _report(server: RunningServer, problem: str) -> str:
    where = f" ({server.url})" if server.url else ""
    return (
        f"MCP server on {server.transport}{where} {problem}\n"
        f"command: {' '.join(server.argv)}\n"
        f"--- server output (stdout and stderr) ---\n{server.output() or '(nothing)'}"
    )


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return text if len(text) <= _OUTPUT_TAIL else "...\n" + text[-_OUTPUT_TAIL:]
