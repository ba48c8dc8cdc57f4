"""The servers of the capacity workload, the request they all answer, and their process lifecycle.

Nine servers over the same ``bench.echo``: ours (the CLI as started by default, then without the
direct path, on h11, and on uvloop: what each costs), the bare mcp low-level server with
and without apcore's Executor (``bench.bare_server``), FastMCP in its own venv
(``bench/fastmcp_server.py``), and the two ASGI floors (``bench.asgi_floor``). Each runs as one
process in its own process group on a free 127.0.0.1 port, stopped by that group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    BENCH_DIR,
    CLK_TCK,
    REPO_ROOT,
    ServerSpec,
    ensure_pinned_venv,
    free_port,
    server_specs,
    wait_port,
)
from bench.modules import ECHO_ID
from bench.rows import BARE, BARE_DIRECT, OURS
from bench.wrk import Load

FASTMCP = "fastmcp-4.2.3"
FLOOR_H11 = "asgi-h11"
FLOOR_FAST = "asgi-httptools-uvloop"
OURS_H11 = "ours-h11"
OURS_SDK_PATH = "ours-sdk-path"
OURS_UVLOOP = "ours-uvloop"
SERVERS = (OURS, OURS_SDK_PATH, OURS_H11, OURS_UVLOOP, BARE, BARE_DIRECT, FASTMCP, FLOOR_H11, FLOOR_FAST)
LABELS = {
    OURS: "apcore-mcp (CLI; httptools where installed)",
    OURS_SDK_PATH: "apcore-mcp (CLI), --no-direct-path (every request through the SDK's streams)",
    OURS_H11: "apcore-mcp (CLI), --http-parser h11",
    OURS_UVLOOP: "apcore-mcp (CLI), --event-loop uvloop",
    BARE: "bare mcp 2.3 low-level server + apcore's Executor",
    BARE_DIRECT: "bare mcp 2.3 low-level server, no Executor",
    FASTMCP: 'FastMCP 4.2.3 (mcp.run(transport="http"))',
    FLOOR_H11: "plain ASGI app on uvicorn, h11 + asyncio",
    FLOOR_FAST: "the same on uvicorn with httptools + uvloop",
}

FASTMCP_VERSION = "4.2.3"
FASTMCP_VENV = REPO_ROOT / ".cache" / f"bench-fastmcp-{FASTMCP_VERSION}"
FASTMCP_PYTHON = FASTMCP_VENV / "bin" / "python"

ECHO_TEXT = "capacity-echo-7d1f"
REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": ECHO_ID,
        "arguments": {"text": ECHO_TEXT},
        # What a 2026-07-28 request without a session must carry (no initialize before it).
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench-wrk", "version": "0"},
        },
    },
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": ECHO_ID,
}
# The echoed text as a member of structuredContent; in the text content it is escaped (\"text\").
EXPECT_PATTERN = '"text"%s*:%s*"' + ECHO_TEXT.replace("-", "%-") + '"'


def load_for(port: int) -> Load:
    return Load(f"http://127.0.0.1:{port}/mcp", ECHO_ID, json.dumps(REQUEST, separators=(",", ":")), EXPECT_PATTERN)


def ensure_fastmcp_venv() -> Path:
    """``.cache/bench-fastmcp-4.2.3`` with ``fastmcp==4.2.3`` (pip resolves the rest)."""
    return ensure_pinned_venv(FASTMCP_VENV, "fastmcp", FASTMCP_VERSION)


def capacity_specs(extensions: Path, names: Sequence[str]) -> list[ServerSpec]:
    """The servers named in ``names`` (out of ``SERVERS``), in ``SERVERS`` order."""
    specs = {spec.name: spec for spec in server_specs(extensions, include_reference=False)}
    floor = [sys.executable, "-m", "bench.asgi_floor", "--stack"]
    ours = specs[OURS]  # the same command on the h11 parser (the loop as ours': what the parser costs)
    specs[OURS_H11] = ServerSpec(OURS_H11, ours.python, [*ours.args, "--http-parser", "h11"])
    specs[OURS_SDK_PATH] = ServerSpec(OURS_SDK_PATH, ours.python, [*ours.args, "--no-direct-path"])
    specs[OURS_UVLOOP] = ServerSpec(OURS_UVLOOP, ours.python, [*ours.args, "--event-loop", "uvloop"])
    specs[FASTMCP] = ServerSpec(FASTMCP, str(FASTMCP_PYTHON), [str(BENCH_DIR / "fastmcp_server.py")])
    specs[FLOOR_H11] = ServerSpec(FLOOR_H11, floor[0], [*floor[1:], "h11"])
    specs[FLOOR_FAST] = ServerSpec(FLOOR_FAST, floor[0], [*floor[1:], "httptools"])
    unknown = sorted(set(names) - set(SERVERS))
    if unknown:
        raise ValueError(f"unknown capacity server(s) {unknown}: choose from {list(SERVERS)}")
    return [specs[name] for name in SERVERS if name in names]


@contextlib.contextmanager
def serving(spec: ServerSpec, *, log: Path | None = None) -> Iterator[tuple[int, int]]:
    """Start ``spec`` in its own process group on a free port; yield ``(pid, port)``; stop the group."""
    port = free_port()
    with contextlib.ExitStack() as stack:
        stderr: Any = stack.enter_context(log.open("ab")) if log else subprocess.DEVNULL
        proc = subprocess.Popen(
            spec.command("streamable-http", port),
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **spec.env},
            start_new_session=True,
        )
        try:
            wait_port(port, proc)
            yield proc.pid, port
        finally:
            stop_group(proc)


def stop_group(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM to the process group, then SIGKILL to it if the leader has not exited in time."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            continue


def check_reply(port: int, *, deadline_s: float = 60.0) -> dict[str, Any]:
    """Post the request once and check it is a correct result, retrying while the server starts.

    Raises:
        RuntimeError: the answer is not HTTP 200 with a JSON-RPC result echoing the text
            (``isError`` false), or no answer before the deadline.
    """
    deadline = time.monotonic() + deadline_s
    load = load_for(port)
    with httpx.Client(timeout=10) as http:
        while True:
            try:
                response = http.post(load.url, content=load.body, headers=HEADERS)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    text = response.text
    try:
        reply = _jsonrpc(text)
        result = reply["result"]
        good = (
            response.status_code == 200
            and reply.get("id") == 1
            and result.get("isError") is False
            and result.get("structuredContent") == {"text": ECHO_TEXT}
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        good = False
    if not good:
        raise RuntimeError(f"not a correct tools/call result: HTTP {response.status_code} {text[:500]}")
    return {"status": response.status_code, "content_type": response.headers.get("content-type"), "reply": text}


def _jsonrpc(text: str) -> Any:
    """The JSON-RPC message of a JSON body or of the last ``data:`` line of an event stream."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants, found by the parent field of every /proc/<n>/stat."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                raw = (entry / "stat").read_text()
                parents.setdefault(int(raw[raw.rindex(")") + 2 :].split()[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def tree_cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its live children, from /proc/<pid>/stat."""
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            raw = Path(f"/proc/{member}/stat").read_text()
            fields = raw[raw.rindex(")") + 2 :].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


def rss_mib(pid: int) -> float | None:
    """Resident set size of ``pid`` (VmRSS), MiB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def native_stack(pid: int) -> dict[str, bool]:
    """Whether uvloop and httptools are loaded in the process (their extension modules are mapped)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return {}
    return {name: f"/{name}/" in maps for name in ("uvloop", "httptools")}
