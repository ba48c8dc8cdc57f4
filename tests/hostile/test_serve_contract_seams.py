"""Where ``validate_inputs`` and ``metrics_collector`` meet the rest: approval, rate limits, upstream tools,
refused and cancelled calls, the toolset endpoints of an ``mcp.json``.

Each case is run through ``BackgroundServer`` (the keywords' public way in) with a real MCP
client; where the seam is an ordering, the case runs with the feature off too, to show what it
changes.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from apcore import MetricsCollector, Registry
from mcp import Client, types
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp import BackgroundServer
from apcore_mcp.calls.limits import RATE_LIMITED

from tests._support.hostile import metric, metrics_text, wait_until
from tests._support.hostile_modules import hostile_registry, sleeper
from tests._support.interactive import Purge
from tests._support.results import text_of
from tests._support.upstreams import UPSTREAM

SECONDS = 20.0
LIMITED: dict[str, Any] = {"rate_limit": 0.01, "rate_burst": 2}


@contextlib.contextmanager
def background(registry: Registry, **options: Any) -> Iterator[BackgroundServer]:
    server = BackgroundServer(registry, port=0, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.wait(SECONDS)


def calls(collector: MetricsCollector) -> dict[str, int]:
    """``module status`` and ``module error_code`` -> count, from the collector's counters."""
    found: dict[str, int] = {}
    for (_, labels), value in collector.snapshot()["counters"].items():
        named = dict(labels)
        found[f"{named['module_id']} {named.get('status') or named['error_code']}"] = value
    return found


def durations(collector: MetricsCollector, module_id: str) -> tuple[int, float]:
    histograms = collector.snapshot()["histograms"]
    key = ("apcore_module_duration_seconds", (("module_id", module_id),))
    return histograms["counts"].get(key, 0), histograms["sums"].get(key, 0.0)


@pytest.mark.parametrize("validate", [True, False])
async def test_an_invalid_call_of_an_approval_gated_tool_asks_nobody(validate: bool, tmp_path: Path) -> None:
    """apcore asks for approval before it validates: the edge check spares the user a question about nonsense."""
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    registry = Registry()
    registry.register("demo.purge", Purge())
    with background(registry, validate_inputs=validate) as server:
        async with Client(f"{server.url}/mcp", mode="legacy", elicitation_callback=approve) as client:
            refused = await client.call_tool("demo.purge", {"marker": 7})
            valid = await client.call_tool("demo.purge", {"marker": str(tmp_path / "ran")})
    assert refused.is_error and text_of(refused).startswith("Input validation failed:")
    assert "- marker: " in text_of(refused)
    assert not valid.is_error and (tmp_path / "ran").exists()  # a valid call is still confirmed, then runs
    assert len(asked) == (1 if validate else 2)


@pytest.mark.parametrize("validate", [True, False])
async def test_invalid_calls_take_no_rate_limit_token(validate: bool) -> None:
    collector = MetricsCollector()
    options: dict[str, Any] = {"rate_limit": 0.01, "rate_burst": 2, "validate_inputs": validate}
    with background(hostile_registry(), metrics_collector=collector, **options) as server:
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            # Without the edge check the Executor refuses them only after admission: each takes a token.
            for _ in range(3 if validate else 2):
                bad = await client.call_tool("hostile.sleep", {"seconds": "long"})
                assert bad.is_error and "- seconds: " in text_of(bad)
            if validate:  # the burst is still whole
                for _ in range(2):
                    assert not (await client.call_tool("hostile.echo", {})).is_error
            with pytest.raises(MCPError) as limited:
                await client.call_tool("hostile.echo", {})
    assert limited.value.code == RATE_LIMITED
    seen = calls(collector)
    assert seen["hostile.sleep invalid_input"] == (3 if validate else 2)
    assert seen["hostile.echo rate_limited"] == 1
    assert seen.get("hostile.echo success", 0) == (2 if validate else 0)


async def test_an_upstream_tool_is_checked_against_its_own_json_schema(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"up": {"command": sys.executable, "args": [str(UPSTREAM)]}}}))
    collector = MetricsCollector()
    with background(Registry(), mcp_config=str(config), validate_inputs=True, metrics_collector=collector) as server:
        bridge = server.bridge
        assert bridge is not None
        await wait_until(lambda: bridge.catalog.get("up.echo") is not None, "the upstream's tools mounted")
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            refused = await client.call_tool("up.echo", {"text": 5})
            missing = await client.call_tool("up.echo", {})
            echoed = await client.call_tool("up.echo", {"text": "hi"})
            defaulted = await client.call_tool("up.fail", {})  # `why` has a default: not refused
    assert refused.is_error and text_of(refused).startswith("Input validation failed:")
    assert "text" in text_of(refused) and "text" in text_of(missing)
    assert not echoed.is_error and text_of(echoed) == "hi"
    assert defaulted.is_error and "because" in text_of(defaulted)  # the upstream's own answer
    seen = calls(collector)
    assert seen["up.echo invalid_input"] == 2 and seen["up.echo success"] == 1
    assert durations(collector, "up.echo")[0] == 3


async def test_a_cancelled_call_and_an_unknown_tool_are_counted() -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    collector = MetricsCollector()
    with background(registry, metrics_collector=collector) as server:
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client.call_tool, "hostile.sleep", {"seconds": 60})
                await wait_until(lambda: counts.started == 1, "the call running")
                tasks.cancel_scope.cancel()
            await wait_until(lambda: "hostile.sleep cancelled" in calls(collector), "the cancelled call counted")
            unknown = await client.call_tool("no.such.tool", {})
    assert unknown.is_error
    seen = calls(collector)
    assert seen["hostile.sleep error"] == 1 and seen["hostile.sleep cancelled"] == 1
    assert seen["_unknown not_found"] == 1  # a client's made-up names do not become label values
    count, total = durations(collector, "hostile.sleep")
    assert count == 1 and total > 0


async def test_a_toolset_endpoints_calls_are_counted_as_the_main_endpoints(tmp_path: Path) -> None:
    """A toolset endpoint runs calls through a router of its own: ``/metrics`` and the collector count them too."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": {"prefix": "hostile.echo"}}}}))
    collector = MetricsCollector()
    with background(hostile_registry(), mcp_config=str(config), metrics_collector=collector, **LIMITED) as server:
        async with Client(f"{server.url}/toolsets/team/mcp", mode="legacy") as client:
            assert not (await client.call_tool("hostile.echo", {})).is_error
            assert (await client.call_tool("hostile.sleep", {"seconds": 0})).is_error  # not in this toolset
            assert not (await client.call_tool("hostile.echo", {})).is_error
            with pytest.raises(MCPError):  # the shared burst is spent
                await client.call_tool("hostile.echo", {})
        text = await metrics_text(server.url)
    seen = calls(collector)
    assert seen["hostile.echo success"] == 2 and seen["hostile.echo rate_limited"] == 1
    assert seen["_unknown not_found"] == 1  # unknown to the endpoint that was asked
    assert metric(text, "apcore_mcp_tool_calls_total", tool="hostile.echo", outcome="ok") == 2
    assert metric(text, "apcore_mcp_tool_calls_total", tool="_unknown", outcome="not_found") == 1
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="rate_limited") == 1


async def in_flight(url: str) -> float:
    return metric(await metrics_text(url), "apcore_mcp_tool_calls_in_flight")


async def in_flight_is(url: str, count: int) -> bool:
    return await in_flight(url) == count


async def test_a_call_running_on_a_toolset_endpoint_is_in_flight(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    registry = hostile_registry()
    counts = sleeper(registry).counts
    with background(registry, mcp_config=str(config)) as server:
        async with Client(f"{server.url}/toolsets/team/mcp", mode="legacy") as client:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client.call_tool, "hostile.sleep", {"seconds": 60})
                await wait_until(lambda: counts.started == 1, "the call running")
                running = await in_flight(server.url)
                tasks.cancel_scope.cancel()
        await wait_until(lambda: counts.cancelled == 1, "the call cancelled")
        await wait_until(lambda: in_flight_is(server.url, 0), "no call in flight")
    assert running == 1


class Exploding:
    """A collector whose every recording fails."""

    def increment_calls(self, module_id: str, status: str) -> None:
        raise RuntimeError("collector down")

    def increment_errors(self, module_id: str, error_code: str) -> None:
        raise RuntimeError("collector down")

    def observe_duration(self, module_id: str, duration_seconds: float) -> None:
        raise RuntimeError("collector down")


async def test_a_failing_collector_does_not_change_the_answer(caplog: pytest.LogCaptureFixture) -> None:
    with background(hostile_registry(), metrics_collector=Exploding()) as server:
        async with Client(f"{server.url}/mcp", mode="legacy") as client:
            result = await client.call_tool("hostile.echo", {})
    assert not result.is_error and json.loads(text_of(result)) == {"ok": True}
    assert any("metrics_collector raised" in message for message in caplog.messages)


@pytest.mark.parametrize("validate", [True, False])
async def test_in_search_mode_the_invoked_tools_arguments_are_checked_before_it_is_asked_about(
    validate: bool, tmp_path: Path
) -> None:
    """``invoke_tool`` runs its target through a router of its own: the edge check must reach that one too."""
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    registry = Registry()
    registry.register("demo.purge", Purge())
    with background(registry, validate_inputs=validate, tool_mode="search") as server:
        async with Client(f"{server.url}/mcp", mode="legacy", elicitation_callback=approve) as client:
            refused = await client.call_tool("invoke_tool", {"name": "demo.purge", "arguments": {"marker": 7}})
            valid = await client.call_tool(
                "invoke_tool", {"name": "demo.purge", "arguments": {"marker": str(tmp_path / "ran")}}
            )
    assert refused.is_error and "Input validation failed:" in text_of(refused)
    assert "- marker: " in text_of(refused)
    assert not valid.is_error and (tmp_path / "ran").exists()
    # With the check on, only the valid call was asked about; without it, apcore asks first, then validates.
    assert len(asked) == (1 if validate else 2)
