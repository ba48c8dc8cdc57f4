"""``serve()``'s whole contract: ``on_startup``, ``on_shutdown``, ``validate_inputs``, ``metrics_collector``.

``serve()`` runs as a process (``tests/servers/contract.py``) on every transport, with real MCP
clients; ``BackgroundServer`` runs in this process. The script writes one line per event to a
file (callbacks, module runs, what its ``apcore.MetricsCollector`` holds at shutdown), so order and
side effects are read back afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from apcore import Executor, MetricsCollector, Registry
from apcore.middleware import Middleware
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.sse import sse_client

from apcore_mcp import BackgroundServer, StartupHookError, serve
from apcore_mcp.testing import free_port

from tests._support.processes import stop_process, wait_ok
from tests._support.results import text_of
from tests.servers.contract import Add, Fail

REPO = Path(__file__).resolve().parents[2]
SECONDS = 20.0


class Caller(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult: ...


def command(events: Path, transport: str, port: int, *flags: str) -> list[str]:
    return [sys.executable, "-m", "tests.servers.contract", str(events), transport, str(port), *flags]


def lines(events: Path) -> list[str]:
    return events.read_text(encoding="utf-8").splitlines() if events.exists() else []


def metrics_of(events: Path) -> dict[str, Any]:
    found = [line.removeprefix("metrics ") for line in lines(events) if line.startswith("metrics ")]
    assert len(found) == 1, lines(events)
    value = json.loads(found[0])
    assert isinstance(value, dict)
    return value


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {SECONDS}s: {what}")
        time.sleep(0.02)


@contextlib.asynccontextmanager
async def connected(transport: str, events: Path, log: Path, *flags: str) -> AsyncIterator[Caller]:
    """A client of ``serve()`` in a process of its own; the server is stopped (SIGTERM) when the block ends."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable, args=command(events, "stdio", 8000, *flags)[1:], cwd=REPO
        )
        async with Client(params, mode="legacy") as client:  # closes stdin at the end: the server stops on EOF
            yield client
        return
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(command(events, transport, port, *flags), cwd=REPO, stderr=out, start_new_session=True)
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc, details=lambda: log.read_text())
        wait_for(lambda: "startup" in lines(events), "on_startup ran")
        if transport == "sse":
            async with sse_client(f"http://127.0.0.1:{port}/sse") as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                yield s
        else:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
                yield client
    finally:
        stop_process(proc)
    assert proc.returncode == 0, log.read_text()


def assert_refused_before_running(result: types.CallToolResult) -> None:
    """The invalid call of ``contract.add`` (``a`` a string, ``b`` missing): refused, both fields named."""
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Input validation failed:"), text
    assert "- a: " in text and "- b: Field required" in text, text


@pytest.mark.parametrize(
    ("transport", "style"),
    [
        ("stdio", "sync"),
        ("stdio", "async"),
        ("streamable-http", "sync"),
        ("streamable-http", "async"),
        ("sse", "async"),
    ],
)
async def test_serve_runs_callbacks_in_order_validates_and_counts(transport: str, style: str, tmp_path: Path) -> None:
    events = tmp_path / "events"
    flags = ["--validate", *(["--async"] if style == "async" else [])]
    async with connected(transport, events, tmp_path / "log", *flags) as client:
        assert lines(events) == ["startup"]
        ok = await client.call_tool("contract.add", {"a": 2, "b": 3})
        assert not ok.is_error and json.loads(text_of(ok)) == {"sum": 5}
        assert_refused_before_running(await client.call_tool("contract.add", {"a": "2"}))
        failed = await client.call_tool("contract.fail", {})
        assert failed.is_error
    wait_for(lambda: "returned" in lines(events), "serve() returned")
    # The refused call left no "run" line: the module never ran for it.
    assert [line for line in lines(events) if not line.startswith("metrics ")] == [
        "startup",
        "run contract.add",
        "run contract.fail",
        "shutdown",
        "returned",
    ]
    metrics = metrics_of(events)
    assert metrics["calls"] == {
        "apcore_module_calls_total:contract.add:success": 1,
        "apcore_module_calls_total:contract.add:error": 1,
        "apcore_module_errors_total:contract.add:invalid_input": 1,
        "apcore_module_calls_total:contract.fail:error": 1,
        "apcore_module_errors_total:contract.fail:internal": 1,
    }
    assert metrics["durations"]["contract.add"]["count"] == 2
    assert metrics["durations"]["contract.fail"]["count"] == 1
    assert metrics["durations"]["contract.add"]["sum"] > 0


@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "sse"])
def test_an_on_startup_error_stops_serve_with_its_error(transport: str, tmp_path: Path) -> None:
    events = tmp_path / "events"
    proc = subprocess.Popen(
        command(events, transport, free_port(), "--bad-startup"),
        cwd=REPO,
        stdin=subprocess.PIPE,  # kept open: a stdio server must stop by itself, not at EOF
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=SECONDS)
    finally:
        stop_process(proc)
    stderr = err.decode()
    assert proc.returncode == 1, stderr
    assert "StartupHookError: on_startup raised ValueError: no database" in stderr
    assert "ValueError: no database" in stderr.split("The above exception was the direct cause")[0]
    assert lines(events) == ["startup"]  # neither on_shutdown nor a return: serve() raised


def test_an_on_shutdown_error_is_logged_and_serve_still_returns(tmp_path: Path) -> None:
    events, log, port = tmp_path / "events", tmp_path / "log", free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command(events, "streamable-http", port, "--bad-shutdown"), cwd=REPO, stderr=out, start_new_session=True
        )
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc, details=lambda: log.read_text())
    finally:
        stop_process(proc)
    assert proc.returncode == 0, log.read_text()
    assert lines(events)[-1] == "returned"
    text = log.read_text()
    assert "on_shutdown raised; the server has stopped regardless" in text and "OSError: flush failed" in text


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
@pytest.mark.parametrize("style", ["sync", "async"])
async def test_background_server_callbacks_and_metrics(transport: str, style: str, tmp_path: Path) -> None:
    events: list[str] = []
    registry = Registry()
    registry.register("contract.add", Add(tmp_path / "runs"))
    registry.register("contract.fail", Fail(tmp_path / "runs"))
    collector = MetricsCollector()

    def started() -> None:
        events.append("startup")

    def stopped() -> None:
        events.append("shutdown")

    async def started_async() -> None:
        await asyncio.sleep(0.2)  # start() waits for it
        events.append("startup")

    async def stopped_async() -> None:
        await asyncio.sleep(0.2)  # wait() waits for it
        events.append("shutdown")

    server = BackgroundServer(
        registry,
        transport=transport,
        port=0,
        on_startup=started_async if style == "async" else started,
        on_shutdown=stopped_async if style == "async" else stopped,
        metrics_collector=collector,
    )
    server.start()
    try:
        assert events == ["startup"]
        if transport == "sse":
            async with sse_client(f"{server.url}/sse") as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                assert not (await session.call_tool("contract.add", {"a": 1, "b": 1})).is_error
                assert (await session.call_tool("contract.fail", {})).is_error
        else:
            async with Client(f"{server.url}/mcp", mode="legacy") as client:
                assert not (await client.call_tool("contract.add", {"a": 1, "b": 1})).is_error
                assert (await client.call_tool("contract.fail", {})).is_error
        assert events == ["startup"]
    finally:
        server.stop()
        server.wait(SECONDS)
    assert not server.running
    assert events == ["startup", "shutdown"]
    counters = collector.snapshot()["counters"]
    assert counters[("apcore_module_calls_total", (("module_id", "contract.add"), ("status", "success")))] == 1
    assert counters[("apcore_module_calls_total", (("module_id", "contract.fail"), ("status", "error")))] == 1
    assert counters[("apcore_module_errors_total", (("error_code", "internal"), ("module_id", "contract.fail")))] == 1
    counts = collector.snapshot()["histograms"]["counts"]
    assert counts[("apcore_module_duration_seconds", (("module_id", "contract.add"),))] == 1


def test_background_server_on_startup_error_stops_the_start_and_frees_the_port(tmp_path: Path) -> None:
    shutdowns: list[str] = []

    def broken() -> None:
        raise ValueError("no database")

    registry = Registry()
    registry.register("contract.add", Add(tmp_path / "runs"))
    server = BackgroundServer(registry, port=0, on_startup=broken, on_shutdown=lambda: shutdowns.append("x"))
    with pytest.raises(StartupHookError, match="on_startup raised ValueError: no database") as raised:
        server.start()
    assert isinstance(raised.value.__cause__, ValueError)
    server.wait(SECONDS)
    assert not server.running
    assert shutdowns == []  # on_shutdown pairs with an on_startup that returned
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health", timeout=2)


class Seen(Middleware):  # type: ignore[misc]  # apcore ships no type information
    """Records the module ids its ``before`` sees: the Executor's pipeline reached middleware."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def before(self, module_id: str, inputs: dict[str, Any], context: Any) -> dict[str, Any] | None:
        self.seen.append(module_id)
        return None


@contextlib.contextmanager
def background(source: Registry | Executor, **options: Any) -> Iterator[BackgroundServer]:
    server = BackgroundServer(source, port=0, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.wait(SECONDS)


@pytest.mark.parametrize("validate", [False, True])
async def test_validate_inputs_refuses_before_middleware_with_the_executors_message(
    validate: bool, tmp_path: Path
) -> None:
    registry = Registry()
    registry.register("contract.add", Add(tmp_path / "runs"))
    middleware = Seen()
    executor = Executor(registry, middlewares=[middleware])
    with background(executor, validate_inputs=validate) as server:
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            result = await client.call_tool("contract.add", {"a": "2"})
    assert_refused_before_running(result)  # the same message either way: the Executor's
    assert middleware.seen == ([] if validate else ["contract.add"])
    assert not (tmp_path / "runs").exists()


class NotACollector:
    def increment_calls(self, module_id: str, status: str) -> None: ...


@pytest.mark.parametrize(
    ("keyword", "value", "message"),
    [
        ("on_startup", "start", "on_startup must be callable or None, got str"),
        ("on_shutdown", 5, "on_shutdown must be callable or None, got int"),
        ("metrics_collector", NotACollector(), "metrics_collector must be an apcore MetricsCollector"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_keyword(keyword: str, value: object, message: str) -> None:
    registry = Registry()
    wrong: dict[str, Any] = {keyword: value}
    with pytest.raises(TypeError, match=message):
        serve(registry, transport="streamable-http", port=free_port(), **wrong)
    with pytest.raises(TypeError, match=message):
        BackgroundServer(registry, port=0, **wrong)


def test_the_docs_example_runs() -> None:
    """docs/serving.md's "Starting, stopping, checking and counting calls" block, as written."""
    page = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    marker = "<!-- run by: tests/run/test_serve_contract.py -->\n```python\n"
    start = page.index(marker) + len(marker)
    code = page[start : page.index("```", start)]
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "started\nsum: 5\nrefused: Input validation failed:" in done.stdout, done.stdout
    assert "stopped\ncalls: " in done.stdout, done.stdout
