"""Workload 7: ``Executor.call_async`` in process, apcore's standard pipeline against ours (issue 12).

Both executors serve the same discovered example registry (``examples/extensions``); calls
alternate between them round by round so machine noise lands on both alike. A cProfile run of
each shows how much of a call goes to pydantic's ``model_json_schema``.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import time
from typing import Any

from apcore import Context, Executor

from apcore_mcp.pipeline import close_pipeline, install_pipeline
from bench.common import REPO_ROOT, median, profile_table
from bench.inproc import discover
from bench.rows import Config, row

EXAMPLES = REPO_ROOT / "examples" / "extensions"
STANDARD = "apcore standard pipeline"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "text.stats": ("sync", {"text": "the cat and the hat sat on the mat", "top_n": 2}),
    "tasks.schedule": (
        "async, nested models",
        {"title": "ship", "due": "2026-12-01T09:00:00+00:00", "reminders": [{"minutes_before": 10}]},
    ),
}
WARM_UP = 50


def executors() -> dict[str, Executor]:
    registry = discover(EXAMPLES)
    return {"fast": install_pipeline(Executor(registry)), "standard": Executor(registry)}


async def _per_call_ms(executor: Executor, module_id: str, inputs: dict[str, Any], calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await executor.call_async(module_id, dict(inputs), Context.create())
        times.append((time.perf_counter() - started) * 1000)
    return times


def call_times(module_id: str, calls: int, rounds: int) -> dict[str, Any]:
    """Per-call times of both pipelines over interleaved rounds: median, best round, spread."""
    inputs = CALLS[module_id][1]
    sides = executors()

    async def run() -> dict[str, list[list[float]]]:
        for executor in sides.values():
            await _per_call_ms(executor, module_id, inputs, WARM_UP)
        per_round: dict[str, list[list[float]]] = {name: [] for name in sides}
        for _ in range(rounds):
            for name, executor in sides.items():
                per_round[name].append(await _per_call_ms(executor, module_id, inputs, calls))
        return per_round

    per_round = asyncio.run(run())
    close_pipeline(sides["fast"])
    figures = {}
    for name, rounds_ms in per_round.items():
        means = [sum(r) / len(r) for r in rounds_ms]
        figures[name] = {
            "median_ms": median([t for r in rounds_ms for t in r]),
            "best_round_mean_ms": min(means),
            "round_means_ms": means,
            "spread_ms": max(means) - min(means),
        }
    return {**figures, "calls_per_round": calls, "rounds": rounds}


def schema_profile(module_id: str, calls: int) -> dict[str, dict[str, float]]:
    """cProfile of ``calls`` calls per pipeline: ``model_json_schema`` calls per call and share of time."""
    inputs = CALLS[module_id][1]
    found = {}
    for name, executor in executors().items():
        asyncio.run(_per_call_ms(executor, module_id, inputs, WARM_UP))
        profile = cProfile.Profile()
        profile.enable()
        asyncio.run(_per_call_ms(executor, module_id, inputs, calls))
        profile.disable()
        table = profile_table(pstats.Stats(profile))
        ncalls, cumulative = 0, 0.0
        for (path, _line, function), (_cc, nc, _tt, ct, _callers) in table.items():
            if function == "model_json_schema" and path.endswith("pydantic/main.py"):
                ncalls, cumulative = nc, ct
        total = sum(entry[2] for entry in table.values())  # what pstats sums into total_tt
        found[name] = {"per_call": ncalls / calls, "share_pct": 100 * cumulative / total if total else 0.0}
        if name == "fast":
            close_pipeline(executor)
    return found


def pipeline(cfg: Config) -> list[dict[str, Any]]:
    rounds = max(cfg.reps, 5)
    calls = max(cfg.calls // rounds, 10)
    rows = []
    for module_id, (kind, _inputs) in CALLS.items():
        times = call_times(module_id, calls, rounds)
        fast, standard = times["fast"], times["standard"]
        spread = f"round spread ours {fast['spread_ms']:.3f} / standard {standard['spread_ms']:.3f} ms"
        rows.append(
            row(
                "7 executor pipeline",
                f"Executor.call_async per call, {module_id} ({kind}), median of {rounds} interleaved rounds "
                f"x {calls} calls; {spread}",
                "ms",
                fast["median_ms"],
                {STANDARD: standard["median_ms"]},
                target="< 0.5x standard",
                met=fast["median_ms"] < 0.5 * standard["median_ms"],
                details=times,
            )
        )
        rows.append(
            row(
                "7 executor pipeline",
                f"Executor.call_async per call, {module_id}, best round mean of {rounds}",
                "ms",
                fast["best_round_mean_ms"],
                {STANDARD: standard["best_round_mean_ms"]},
            )
        )
    profiled = schema_profile("text.stats", max(cfg.calls // 2, 10))
    fast, standard = profiled["fast"], profiled["standard"]
    rows.append(
        row(
            "7 executor pipeline",
            "model_json_schema() calls per call_async, text.stats (cProfile)",
            "count",
            fast["per_call"],
            {STANDARD: standard["per_call"]},
            details=profiled,
        )
    )
    rows.append(
        row(
            "7 executor pipeline",
            "cProfile share of call_async time in model_json_schema, text.stats",
            "%",
            fast["share_pct"],
            {STANDARD: standard["share_pct"]},
            details=profiled,
        )
    )
    return rows
