"""A dry run (``_meta: {"apcore/dryRun": true}`` on ``tools/call``) checks a call without running it.

The SDK's own client, in memory, in both protocol eras. The module has a side effect (it
counts its runs): a dry run must leave the count where it was, whatever the verdict.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from apcore import ModuleAnnotations, Registry
from mcp import Client
from mcp.types import RequestParamsMeta
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.dry_run import DRY_RUN_META
from apcore_mcp.settings import Settings

from tests._support.modules import module_of

DRY = cast(RequestParamsMeta, {DRY_RUN_META: True})  # a key of ours beside the SDK's


class CountIn(BaseModel):
    count: int


class CountOut(BaseModel):
    total: int


def counting_registry(runs: list[int]) -> Registry:
    def touch(count: int) -> dict[str, Any]:
        runs.append(count)
        return {"total": sum(runs)}

    registry = Registry()
    registry.register("demo.touch", module_of(touch, input=CountIn, output=CountOut))
    gated = module_of(touch, input=CountIn, output=CountOut, annotations=ModuleAnnotations(requires_approval=True))
    registry.register("demo.gated", gated)
    return registry


def report(result: Any) -> dict[str, Any]:
    assert result.is_error is True  # never the tool's output
    assert result.meta is not None
    verdict = result.meta[DRY_RUN_META]
    assert isinstance(verdict, dict)
    return verdict


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_dry_run_checks_without_running(mode: str) -> None:
    runs: list[int] = []
    bridge = Bridge.build(counting_registry(runs), Settings())
    async with BridgeService(bridge), Client(bridge.server, mode=mode, cache=None) as client:
        passing = report(await client.call_tool("demo.touch", {"count": 2}, meta=DRY))
        failing = report(await client.call_tool("demo.touch", {"count": "two"}, meta=DRY))
        gated = report(await client.call_tool("demo.gated", {"count": 3}, meta=DRY))
        assert runs == []
        real = await client.call_tool("demo.touch", {"count": 2})
    assert runs == [2] and real.is_error is False
    assert passing["valid"] is True and passing["requiresApproval"] is False
    assert {check["check"] for check in passing["checks"]} >= {"module_lookup", "acl", "schema"}
    assert failing["valid"] is False
    schema = next(check for check in failing["checks"] if check["check"] == "schema")
    assert schema["passed"] is False and "count" in schema["error"]
    assert gated["valid"] is True and gated["requiresApproval"] is True


async def test_dry_run_of_an_absent_tool_is_not_found() -> None:
    bridge = Bridge.build(counting_registry([]), Settings())
    async with BridgeService(bridge), Client(bridge.server, mode="auto", cache=None) as client:
        dry = await client.call_tool("demo.gone", {"count": 1}, meta=DRY)
        real = await client.call_tool("demo.gone", {"count": 1})
    assert dry.model_dump() == real.model_dump()
