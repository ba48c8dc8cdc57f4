"""The catalog: built once, filtered, live, thread-safe; and what the call path logs."""

from __future__ import annotations

import logging
import threading

import mcp.types as types
import pytest
from apcore import Registry
from mcp import Client

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.tools.catalog import ToolCatalog

from tests._support.modules import EXPECTED_TOOLS, Echo, make_executor, make_registry


def counting_definitions(registry: Registry) -> list[str]:
    """Record every ``get_definition`` call made on ``registry`` (instrumentation, not a fake)."""
    calls: list[str] = []
    original = registry.get_definition

    def counted(module_id: str, *args: object, **kwargs: object) -> object:
        calls.append(module_id)
        return original(module_id, *args, **kwargs)

    registry.get_definition = counted
    return calls


async def test_definitions_are_built_once_not_per_request() -> None:
    registry = Registry()
    for index in range(100):
        registry.register(f"bulk.m{index:03d}", Echo())
    calls = counting_definitions(registry)
    bridge = Bridge.build(registry)
    assert len(calls) == 100
    async with Client(bridge.server, mode="legacy") as client:
        for _ in range(5):
            assert len((await client.list_tools()).tools) == 100
        await client.call_tool("bulk.m007", {"text": "x"})
    assert len(calls) == 100


def test_live_updates_respect_the_filters() -> None:
    registry = make_registry()
    catalog = ToolCatalog(registry, tags=["public"], prefix="demo.")
    catalog.watch()
    catalog.load()
    changes: list[str] = []
    catalog.subscribe(lambda record: changes.append(record.name))
    registry.register("demo.public", Echo())  # tags ["public"], prefix matches
    registry.register("other.public", Echo())  # prefix does not match

    class Untagged(Echo):
        tags: list[str] = []

    registry.register("demo.untagged", Untagged())
    assert [record.name for record in catalog.records()] == ["demo.denied", "demo.echo", "demo.path", "demo.public"]
    registry.unregister("other.public")
    registry.unregister("demo.public")
    assert changes == ["demo.public", "demo.public"]
    catalog.unwatch()
    registry.register("demo.after", Echo())
    assert catalog.get("demo.after") is None


def test_concurrent_registrations_from_threads_leave_a_consistent_catalog() -> None:
    registry = Registry()
    catalog = ToolCatalog(registry)
    catalog.watch()
    catalog.load()
    errors: list[BaseException] = []
    stop = threading.Event()

    def churn(worker: int) -> None:
        try:
            for round_ in range(40):
                registry.register(f"w{worker}.m{round_}", Echo())
                if round_ % 2:
                    registry.unregister(f"w{worker}.m{round_}")
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        while not stop.is_set():
            snapshot = catalog.records()
            assert [r.name for r in snapshot] == sorted(r.name for r in snapshot)
            assert len(catalog.mcp_tools()) >= 0

    reader = threading.Thread(target=read)
    reader.start()
    workers = [threading.Thread(target=churn, args=(n,)) for n in range(4)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(30)
    stop.set()
    reader.join(10)
    assert errors == []
    expected = sorted(f"w{w}.m{r}" for w in range(4) for r in range(0, 40, 2))
    assert [record.name for record in catalog.records()] == expected
    assert sorted(registry.list()) == expected


async def test_call_errors_are_logged_server_side(caplog: pytest.LogCaptureFixture) -> None:
    bridge = Bridge.build(make_executor(), Settings())
    caplog.set_level(logging.DEBUG, logger="apcore_mcp")
    async with Client(bridge.server, mode="legacy") as client:
        await client.call_tool("demo.boom", {})
        await client.call_tool("demo.echo", {})
    records = [r for r in caplog.records if r.name.startswith("apcore_mcp")]
    assert any(r.levelno == logging.DEBUG and r.getMessage() == "Tool call: demo.boom" for r in records)
    boom = next(r for r in records if r.levelno == logging.ERROR and "demo.boom" in r.getMessage())
    assert boom.exc_info is not None
    assert "secret /etc/passwd" in boom.getMessage() + str(boom.exc_info[1])
    # A caller's mistake is not a server fault: a WARNING without a traceback.
    invalid = next(r for r in records if "demo.echo" in r.getMessage() and r.getMessage().startswith("Tool call error"))
    assert invalid.levelno == logging.WARNING
    assert invalid.getMessage().startswith("Tool call error: demo.echo - SchemaValidationError")
    assert invalid.exc_info is None


async def test_tools_list_is_served_from_cache_until_the_catalog_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = make_registry()
    bridge = Bridge.build(registry, Settings(dynamic=True))
    handler_calls = 0
    render = bridge.catalog.mcp_tools

    def counted() -> list[types.Tool]:
        nonlocal handler_calls
        handler_calls += 1
        return render()

    monkeypatch.setattr(bridge.catalog, "mcp_tools", counted)
    async with BridgeService(bridge):  # follows the registry while it serves
        for mode in ("legacy", "auto"):
            async with Client(bridge.server, mode=mode, cache=None) as client:
                for _ in range(3):
                    assert len((await client.list_tools()).tools) == len(EXPECTED_TOOLS)
        assert handler_calls == 2  # once per protocol version
        registry.register("demo.fresh", Echo())
        async with Client(bridge.server, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
        assert "demo.fresh" in names and handler_calls == 3
