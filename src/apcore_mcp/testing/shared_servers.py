"""Servers shared for a scope: started on first use, reused while alive, stopped together."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from apcore_mcp.testing.harness import DEFAULT_READY_TIMEOUT, RunningServer, ServerCommand, start_server


class ServerPool:
    """Running servers keyed by ``(command, transport)``. Thread-safe; ``close()`` stops them all.

    A shared server is never handed out dead: one whose process ended (or, in memory, that was
    stopped) is started again.
    """

    def __init__(self, workdir: Path | None = None) -> None:
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="apcore-mcp-servers-"))
        self._servers: dict[tuple[ServerCommand, str], RunningServer] = {}
        self._lock = threading.Lock()
        self._count = 0

    def get(self, command: ServerCommand, transport: str, *, timeout: float = DEFAULT_READY_TIMEOUT) -> RunningServer:
        key = (command, transport)
        with self._lock:
            server = self._servers.get(key)
            if server is not None and server.alive:
                return server
            self._count += 1
            server = start_server(command, transport, self.workdir / f"{self._count}-{transport}", timeout=timeout)
            self._servers[key] = server
            return server

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
