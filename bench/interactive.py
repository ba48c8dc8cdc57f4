"""Workload 11: what interactive calls cost (issue 7).

- Progress: a call sending N progress notifications against the same call sending none, in
  interleaved rounds; (difference of the medians) / N is the cost of one notification. In
  memory (the SDK client in process) and over Streamable HTTP (uvicorn on 127.0.0.1), both eras.
- Approval: a call of an approval-gated module answered "yes" by the client (an elicitation
  round trip in the handshake era, an input-required round in 2026-07-28) against the same
  module without the gate: the extra time is the approval round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from apcore import ModuleAnnotations, Registry
from mcp import Client
from mcp.client import ClientRequestContext
from pydantic import BaseModel

from apcore_mcp import report_progress
from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import serving_http
from bench.common import median
from bench.rows import Config, row

NOTIFICATIONS = 20
PLAIN = "no progress"
GATED = "without approval"


class StepsIn(BaseModel):
    steps: int = 0


class Done(BaseModel):
    steps: int


class Steps:
    description = "Reports progress `steps` times, then answers"
    input_schema = StepsIn
    output_schema = Done

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        for step in range(1, inputs.get("steps", 0) + 1):
            await report_progress(context, step, inputs["steps"])
        return {"steps": inputs.get("steps", 0)}


class Gated(Steps):
    description = "The same, behind the approval gate"
    annotations = ModuleAnnotations(requires_approval=True)


def registry() -> Registry:
    found = Registry()
    found.register("bench.steps", Steps())
    found.register("bench.gated", Gated())
    return found


async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


async def ignore_progress(_progress: float, _total: float | None, _message: str | None) -> None:
    return None


@contextlib.asynccontextmanager
async def client_for(where: str, era: str, bridge: Bridge) -> AsyncIterator[Any]:
    mode = "legacy" if era == "handshake" else "auto"
    if where == "memory":
        async with Client(bridge.server, mode=mode, elicitation_callback=approve, cache=None) as client:
            yield client
        return
    async with (
        serving_http(bridge) as (_server, base),
        Client(f"{base}/mcp", mode=mode, elicitation_callback=approve, cache=None) as client,
    ):
        yield client


async def timed(client: Any, tool: str, steps: int) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, {"steps": steps}, progress_callback=ignore_progress)
    elapsed = (time.perf_counter() - started) * 1000
    assert not result.is_error, result
    return elapsed


async def measure(where: str, era: str, calls: int) -> dict[str, list[float]]:
    """Interleaved: plain call, call with N notifications, ungated, gated (approved)."""
    bridge = Bridge.build(registry())
    times: dict[str, list[float]] = {PLAIN: [], "progress": [], GATED: [], "approval": []}
    async with client_for(where, era, bridge) as client:
        for _ in range(5):  # warm-up
            await timed(client, "bench.steps", 0)
            await timed(client, "bench.gated", 0)
        for _ in range(calls):
            times[PLAIN].append(await timed(client, "bench.steps", 0))
            times["progress"].append(await timed(client, "bench.steps", NOTIFICATIONS))
            times[GATED].append(await timed(client, "bench.steps", 1))
            times["approval"].append(await timed(client, "bench.gated", 1))
    return times


def interactive(cfg: Config) -> list[dict[str, Any]]:
    calls = max(cfg.roundtrip_calls // 3, 5)
    rows = []
    for where in ("memory", "streamable-http"):
        for era in ("handshake", "2026-07-28"):
            times = asyncio.run(measure(where, era, calls))
            plain, progress = median(times[PLAIN]), median(times["progress"])
            per_notification = max(progress - plain, 0.0) / NOTIFICATIONS
            rows.append(
                row(
                    "11 interactive",
                    f"cost of one progress notification beyond the same call without it, {where}, {era} "
                    f"(({NOTIFICATIONS} notifications - none) / {NOTIFICATIONS}, median of {calls} interleaved calls)",
                    "ms",
                    per_notification,
                    {"whole call without progress": plain},
                    details={"median_ms": {name: median(values) for name, values in times.items()}},
                )
            )
            gated, approved = median(times[GATED]), median(times["approval"])
            rows.append(
                row(
                    "11 interactive",
                    f"call with an approval answered yes, {where}, {era} (median of {calls} interleaved calls)",
                    "ms",
                    approved,
                    {"same call without the gate": gated},
                    details={"approval_round_trip_ms": approved - gated},
                )
            )
    return rows
