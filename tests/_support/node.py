"""Running our TypeScript SDK client (``ts-client.mjs``) from tests.

The official ``@modelcontextprotocol/sdk`` is installed on first use into ``$MCP_CLIENT_DEPS``
(default ``<repo>/.cache/npm``, where ``scripts/test.sh`` puts it too), under a file lock so
parallel test processes install it once. This lives with the tests, not in
``apcore_mcp.testing``: it is our interoperability check, needs Node and npm, and a library
should not install npm packages as a side effect of being imported by a user's tests.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apcore_mcp.testing import RunningServer

SDK_PACKAGE = "@modelcontextprotocol/sdk"
SDK_VERSION = "1.32.2"
TS_CLIENT = Path(__file__).resolve().with_name("ts-client.mjs")
REPO = Path(__file__).resolve().parents[2]
NPM_INSTALL_TIMEOUT = 300
EXIT_TOOL_ERROR = 2


class NodeUnavailable(RuntimeError):
    """node or npm is missing, or the SDK could not be installed; the message says how to fix it."""


def client_deps() -> Path:
    return Path(os.environ.get("MCP_CLIENT_DEPS") or REPO / ".cache" / "npm")


def installed_version(deps: Path) -> str | None:
    manifest = deps / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (FileNotFoundError, ValueError, KeyError):
        return None


def ensure_sdk(deps: Path | None = None) -> Path:
    """The directory whose ``node_modules`` holds the pinned SDK, installing it if needed."""
    deps = deps or client_deps()
    if installed_version(deps) == SDK_VERSION:
        return deps
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise NodeUnavailable("node and npm are needed for the TypeScript client tests (scripts/test.sh installs them)")
    deps.mkdir(parents=True, exist_ok=True)
    with (deps / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version(deps) != SDK_VERSION:
            command = [npm, "install", "--prefix", str(deps), "--no-audit", "--no-fund", "--loglevel=error"]
            done = subprocess.run(
                [*command, f"{SDK_PACKAGE}@{SDK_VERSION}"], capture_output=True, text=True, timeout=NPM_INSTALL_TIMEOUT
            )
            if done.returncode != 0:
                raise NodeUnavailable(f"npm install {SDK_PACKAGE}@{SDK_VERSION} failed:\n{done.stdout}\n{done.stderr}")
    return deps


@dataclass(frozen=True)
class TsRun:
    """One run of the TS client: its exit code and the JSON report it printed."""

    command: list[str]
    returncode: int
    report: dict[str, Any]
    stderr: str

    def __str__(self) -> str:
        return f"$ {' '.join(self.command)}\nexit {self.returncode}\n{json.dumps(self.report, indent=2)}\n{self.stderr}"

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.report, str(self)
        result: dict[str, Any] = self.report["result"]
        return result

    @property
    def texts(self) -> list[str]:
        return [block["text"] for block in self.result.get("content", []) if block.get("type") == "text"]


def target(server: RunningServer) -> list[str]:
    """The transport arguments of ``ts-client.mjs`` for ``server``."""
    if server.transport == "streamable-http":
        return ["http", server.url or ""]
    if server.transport == "sse":
        return ["sse", server.url or ""]
    return ["stdio", "--", *server.argv]


def run_ts_client(server: RunningServer, *options: str, timeout: float = 60) -> TsRun:
    """Run ``ts-client.mjs OPTIONS <server's transport>`` and parse its report."""
    deps = ensure_sdk()
    command = ["node", str(TS_CLIENT), "--timeout", str(int(timeout * 1000)), *options, *target(server)]
    env = {**os.environ, **server.env, "MCP_CLIENT_DEPS": str(deps), "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout + 30, env=env, cwd=server.cwd or REPO
    )
    try:
        report = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        report = {"unparsed stdout": done.stdout}
    return TsRun(command, done.returncode, report, done.stderr)


if __name__ == "__main__":  # install only: python -m tests._support.node
    print(ensure_sdk(), file=sys.stderr)
