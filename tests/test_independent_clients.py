"""The CLI server checked by clients we did not write.

- ``ts-client.mjs``: a real MCP client on the official TypeScript SDK, over Streamable HTTP,
  legacy SSE and stdio (marker ``interop``);
- ``conformance.sh``: the official MCP server conformance suite against ``/mcp``
  (marker ``conformance``).

Both live in the shared tools directory next to the repository (``../shared/tools``); the
module is skipped when that directory is absent. They need ``node``/``npm`` on PATH; the npm
dependencies are installed on first use (ts-client: into ``$MCP_CLIENT_DEPS``, default
``/tmp/mcp-deps``; the conformance suite and Node 22: by ``conformance.sh`` itself into
``$MCP_CONF_DEPS``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, stop_process, wait_ok

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
TOOLS = SHARED / "tools"
TS_CLIENT = TOOLS / "ts-client.mjs"
CONFORMANCE = TOOLS / "conformance.sh"
EXTENSIONS = REPO_ROOT / "examples" / "extensions"

SDK_VERSION = "1.32.2"
EXPECTED_TOOLS = ["files.purge", "geo.distance", "tasks.schedule", "text.stats"]
TRANSPORTS = ["http", "sse", "stdio"]
CONFORMANCE_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]

HEALTH_DEADLINE_S = 20.0
NODE_TIMEOUT_S = 60
NPM_INSTALL_TIMEOUT_S = 300
# The first conformance run installs the suite and Node 22.
CONFORMANCE_TIMEOUT_S = 600

if not SHARED.is_dir():
    pytest.skip(
        f"shared tools directory {SHARED} is absent (expected next to the repository: ../shared)",
        allow_module_level=True,
    )


def _text(data: str | bytes | None) -> str:
    """Output captured by a TimeoutExpired, which may be bytes even with text=True."""
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The CLI on a free 127.0.0.1 port (Streamable HTTP at /mcp, legacy SSE at /sse)."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_dir = tmp_path_factory.mktemp("cli-server")
    stdout_path, stderr_path = log_dir / "stdout.log", log_dir / "stderr.log"
    cmd = [
        sys.executable, "-m", "apcore_mcp",
        "--extensions-dir", str(EXTENSIONS),
        "--transport", "streamable-http",
        "--host", "127.0.0.1",
        "--port", str(port),
    ]  # fmt: skip
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        wait_ok(
            f"{base_url}/health",
            proc,
            HEALTH_DEADLINE_S,
            lambda: f"cmd: {cmd}\nstderr:\n{stderr_path.read_text(errors='replace')}",
        )
        yield base_url
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def client_deps() -> Path:
    """A dir whose node_modules holds @modelcontextprotocol/sdk; installed there if missing."""
    deps = Path(os.environ.get("MCP_CLIENT_DEPS") or "/tmp/mcp-deps")
    if not (deps / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        deps.mkdir(parents=True, exist_ok=True)
        cmd = [
            "npm", "install", "--prefix", str(deps), "--no-audit", "--no-fund",
            f"@modelcontextprotocol/sdk@{SDK_VERSION}",
        ]  # fmt: skip
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=NPM_INSTALL_TIMEOUT_S)
        except FileNotFoundError:
            pytest.fail("npm is not on PATH: needed to install the ts-client's MCP SDK")
        assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return deps


def _ts_client(deps: Path, target: list[str], *, call: str, args: dict[str, Any]) -> tuple[int, str]:
    cmd = ["node", str(TS_CLIENT), "--call", call, "--args", json.dumps(args), *target]
    try:
        done = subprocess.run(
            cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=NODE_TIMEOUT_S,
            env={**os.environ, "MCP_CLIENT_DEPS": str(deps)},
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"ts-client did not finish within {NODE_TIMEOUT_S} s: {cmd}\n{_text(exc.stdout)}\n{_text(exc.stderr)}"
        )
    return done.returncode, f"$ {' '.join(cmd)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def _target(transport: str, base_url: str) -> list[str]:
    if transport == "http":
        return ["http", f"{base_url}/mcp"]
    if transport == "sse":
        return ["sse", f"{base_url}/sse"]
    return ["stdio", "--", sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(EXTENSIONS)]


def _parse(output: str) -> tuple[list[str], dict[str, Any]]:
    """(tool names, call result) from ts-client's stdout: info line, tools line, result JSON."""
    stdout = output.split("--- stdout\n", 1)[1].split("\n--- stderr\n", 1)[0]
    lines = stdout.splitlines()
    tools_line = next(line for line in lines if line.startswith("tools ("))
    names = [n.strip() for n in tools_line.split(":", 1)[1].split(",") if n.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("{"))
    return names, json.loads("\n".join(lines[start:]))


@pytest.mark.interop
@pytest.mark.timeout(NPM_INSTALL_TIMEOUT_S + 2 * NODE_TIMEOUT_S)
class TestTsClient:
    """The official TypeScript SDK client against the CLI, on every transport."""

    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_lists_tools_and_calls_one(self, transport: str, server_url: str, client_deps: Path) -> None:
        rc, output = _ts_client(client_deps, _target(transport, server_url), call="text.stats", args={"text": "a b a"})
        assert rc == 0, output
        names, result = _parse(output)
        assert sorted(names) == EXPECTED_TOOLS, output
        assert result.get("isError") is not True, output
        structured = result.get("structuredContent")
        if structured is None:  # fall back to the text block
            structured = json.loads(result["content"][0]["text"])
        assert structured["words"] == 3, output
        assert structured["characters"] == 5, output

    @pytest.mark.parametrize("transport", TRANSPORTS)
    def test_invalid_arguments_give_tool_error(self, transport: str, server_url: str, client_deps: Path) -> None:
        rc, output = _ts_client(client_deps, _target(transport, server_url), call="text.stats", args={})
        assert rc == 2, output  # 2 = the tool result had isError: true (not a protocol error)
        _, result = _parse(output)
        assert result["isError"] is True, output
        text = " ".join(c.get("text", "") for c in result["content"] if c.get("type") == "text")
        assert "text" in text and "required" in text.lower(), output


@pytest.mark.conformance
@pytest.mark.timeout(CONFORMANCE_TIMEOUT_S + 60)
class TestConformance:
    """The official MCP conformance suite against /mcp, one scenario per run."""

    @pytest.mark.parametrize("scenario", CONFORMANCE_SCENARIOS)
    def test_scenario(self, scenario: str, server_url: str, tmp_path: Path) -> None:
        cmd = ["bash", str(CONFORMANCE), f"{server_url}/mcp", "--scenario", scenario]
        env = {**os.environ, "MCP_CONF_OUT": str(tmp_path), "MCP_CONF_TIMEOUT": "120"}
        try:
            done = subprocess.run(
                cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=CONFORMANCE_TIMEOUT_S, env=env
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(
                f"conformance.sh did not finish within {CONFORMANCE_TIMEOUT_S} s\n{_text(exc.stdout)}\n{_text(exc.stderr)}"
            )
        output = f"$ {' '.join(cmd)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        run_log = tmp_path / "run.log"
        if done.returncode != 0 and run_log.is_file():
            output += f"\n--- run.log\n{run_log.read_text(errors='replace')}"
        print(output)
        assert done.returncode == 0, output
        rows = [line.split() for line in done.stdout.splitlines()]
        assert not [r for r in rows if len(r) > 1 and r[1] == "FAIL"], output
        assert [r for r in rows if r[:2] == [scenario, "PASS"]], output
        assert "VACUOUS" not in done.stdout, output
        assert done.stdout.strip().splitlines()[-1] == "1 passed, 0 failed", output
