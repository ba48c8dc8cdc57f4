"""Workload 14 (capacity, issue 18): how many 2026-07-28 ``tools/call`` one server process answers.

``wrk`` (compiled; ``bench/capacity.lua``) posts the same ``bench.echo`` call over keep-alive
connections to each server of ``bench.capacity_servers`` in interleaved rounds (the order rotates
each round, so a slow spell of this shared machine lands on every server alike). Per round and
connection count: correct calls/s, server CPU per call (``/proc/<pid>/stat`` of the server and any
children, over the wrk run), p50/p99 latency (wrk's), errors (non-2xx, socket errors, replies that
are not a correct result), server RSS at the end, wrk's own CPU. Figures are medians over rounds
with their range.

    python -m bench --only capacity                         # 3 rounds x 5 s, 10 connections
    python -m bench.capacity --connections 10,50,200 --server ours --server asgi-httptools-uvloop
    python -m bench.capacity --show bench/results/latest.json --markdown   # the per-server table
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.capacity_servers import (
    FASTMCP,
    FASTMCP_PYTHON,
    FLOOR_FAST,
    LABELS,
    SERVERS,
    capacity_specs,
    check_reply,
    ensure_fastmcp_venv,
    load_for,
    native_stack,
    rss_mib,
    serving,
    tree_cpu_seconds,
)
from bench.common import ServerSpec, package_versions
from bench.rows import BARE_DIRECT, OURS, Config, row
from bench.wrk import run_wrk

WORKLOAD = "14 capacity"
TARGET_CONNECTIONS = 10
CPU_TARGET = 5.0  # ours' server CPU per call at most this times the httptools + uvloop floor's
FASTMCP_TARGET = 3.0  # ours' calls/s at least this times FastMCP's
BARE_TARGET = 2.0  # ... and this times the bare SDK server's without Executor
WARMUP_SECONDS = 1
FIGURES = ("calls_per_s", "server_cpu_ms_per_call", "p50_ms", "p99_ms", "rss_mib", "wrk_cpu_util", "server_cpu_util")
ERRORS = ("non2xx", "bad_replies", "connect", "read", "write", "timeout")


def measure_once(pid: int, port: int, connections: int, seconds: int) -> dict[str, Any]:
    """One wrk run against a running server: its figures, the server's CPU over the same run."""
    cpu0, t0 = tree_cpu_seconds(pid), time.monotonic()
    w = run_wrk(load_for(port), connections=connections, seconds=seconds)
    cpu, wall = tree_cpu_seconds(pid) - cpu0, time.monotonic() - t0
    calls = w["replies"] - w["non200"] - w["bad"]  # correct results only
    window = w["duration_us"] / 1e6
    errors = {"non2xx": w["non200"], "bad_replies": w["bad"], **{k: w[k] for k in ERRORS[2:]}}
    return {
        "connections": connections,
        "calls": calls,
        "calls_per_s": calls / window,
        "server_cpu_ms_per_call": cpu / calls * 1000 if calls else None,
        "p50_ms": w["p50_us"] / 1000,
        "p99_ms": w["p99_us"] / 1000,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "rss_mib": rss_mib(pid),
        "server_cpu_util": cpu / wall,
        "wrk_cpu_util": w["wrk_cpu_s"] / wall,
        "seconds": window,
    }


Samples = dict[tuple[str, int], list[dict[str, Any]]]
"""Per (server, connections): one result per round."""


def measure(cfg: Config, specs: list[ServerSpec], broken: dict[str, str]) -> Samples:
    """Every server at every connection count, ``cfg.capacity_rounds`` times, interleaved."""
    counts = list(cfg.capacity_connections)
    samples: Samples = {}
    for round_ in range(cfg.capacity_rounds):
        shift = round_ % len(specs)
        for spec in specs[shift:] + specs[:shift]:
            done: dict[int, dict[str, Any]] = {}
            failure = broken.get(spec.name)
            if failure is None:
                try:
                    with serving(spec, log=cfg.log) as (pid, port):
                        probe = check_reply(port)  # a correct result before anything is timed
                        run_wrk(load_for(port), connections=max(counts), seconds=WARMUP_SECONDS)
                        for connections in counts:
                            done[connections] = measure_once(pid, port, connections, cfg.capacity_seconds)
                        stack = native_stack(pid)
                    for result in done.values():
                        result.update(probe=probe, native=stack)
                except Exception as exc:
                    failure = f"{type(exc).__name__}: {str(exc)[-500:]}"
            for connections in counts:
                samples.setdefault((spec.name, connections), []).append(done.get(connections) or {"failed": failure})
    return samples


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from the rounds: medians (with the range) of the figures, sums of the errors."""
    good = [run for run in runs if "failed" not in run]
    if not good:
        return {"failed": runs[-1]["failed"] if runs else "not run", "rounds": 0}
    merged: dict[str, Any] = {
        "rounds": len(good),
        "failed_rounds": [run["failed"] for run in runs if "failed" in run],
        "calls": sum(run["calls"] for run in good),
        "errors": sum(run["errors"] for run in good),
        "error_kinds": {k: sum(run["error_kinds"][k] for run in good) for k in ERRORS},
        "native": good[0]["native"],
        "probe": good[0]["probe"],
        "spread": {},
    }
    for key in FIGURES:
        values = [run[key] for run in good if isinstance(run.get(key), int | float)]
        merged[key] = statistics.median(values) if values else None
        merged[f"{key}_by_round"] = values
        if values:
            merged["spread"][key] = [min(values), max(values)]
    # A round that failed counts as errors: a server that answers in some rounds only is not clean.
    merged["errors"] += len(merged["failed_rounds"])
    return merged


def capacity(cfg: Config) -> list[dict[str, Any]]:
    names = list(cfg.capacity_servers or SERVERS)
    specs = capacity_specs(cfg.extensions(cfg.small), names)
    broken: dict[str, str] = {}
    versions: dict[str, Any] = {}
    if FASTMCP in names:
        try:
            versions[FASTMCP] = package_versions(str(ensure_fastmcp_venv()), ["fastmcp", "mcp", "uvicorn", "pydantic"])
        except Exception as exc:  # no package index: the row says so, the others still run
            broken[FASTMCP] = f"cannot create FastMCP's venv ({FASTMCP_PYTHON}): {type(exc).__name__}: {exc}"
    samples = measure(cfg, specs, broken)
    results = {key: merge(runs) for key, runs in samples.items()}
    rows = []
    for connections in cfg.capacity_connections:
        found = {spec.name: results[(spec.name, connections)] for spec in specs}
        rows += connection_rows(cfg, connections, found)
    rows[0]["details"]["fastmcp_venv"] = versions
    return rows


def connection_rows(cfg: Config, connections: int, found: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows at one connection count: calls/s, server CPU per call, latency, errors, RSS, CPU use."""
    mine = found.get(OURS, {})
    others = {name: result for name, result in found.items() if name != OURS}
    label = f"2026-07-28 tools/call via wrk, {connections} connections, median of {cfg.capacity_rounds} rounds"
    targeted = connections == TARGET_CONNECTIONS and bool(mine)

    def figure_row(metric: str, unit: str, key: str, **target: Any) -> dict[str, Any]:
        return row(
            WORKLOAD,
            f"{metric}, {label}",
            unit,
            mine.get(key),
            {name: result.get(key) for name, result in others.items()},
            spread={name: r["spread"][key] for name, r in found.items() if key in r.get("spread", {})},
            **target,
        )

    rate = figure_row("calls/s", "calls/s", "calls_per_s", **(rate_target(found) if targeted else {}))
    rate["details"] = {"connections": connections, "servers": {name: LABELS[name] for name in found}, **found}
    cpu = figure_row("server CPU per call", "ms", "server_cpu_ms_per_call", **(cpu_target(found) if targeted else {}))
    errors = row(
        WORKLOAD,
        f"errors (non-2xx, socket, bad replies, failed rounds), {label}",
        "count",
        mine.get("errors"),
        {name: result.get("errors") for name, result in others.items()},
        target="0 errors",
        met=mine.get("errors") == 0 if mine else None,
        details={name: result.get("error_kinds") or result.get("failed") for name, result in found.items()},
    )
    return [
        rate,
        cpu,
        figure_row("p50 latency", "ms", "p50_ms"),
        figure_row("p99 latency", "ms", "p99_ms"),
        errors,
        figure_row("server RSS at the end", "MiB", "rss_mib"),
        # Below ~0.9 the server process was not busy all the time (preempted on this shared machine,
        # or waiting): its calls/s then understate it, its CPU per call does not.
        figure_row("server CPU (share of one core)", "cores", "server_cpu_util"),
        figure_row("load generator CPU (wrk, share of one core)", "cores", "wrk_cpu_util"),
    ]


def _ratio(found: dict[str, dict[str, Any]], key: str, other: str) -> float | None:
    mine, theirs = found.get(OURS, {}).get(key), found.get(other, {}).get(key)
    return mine / theirs if mine is not None and theirs else None


def rate_target(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """calls/s >= 3x FastMCP and >= 2x the bare SDK server without Executor, each with its verdict."""
    parts, met = [], True
    for other, factor in ((FASTMCP, FASTMCP_TARGET), (BARE_DIRECT, BARE_TARGET)):
        ratio = _ratio(found, "calls_per_s", other)
        ok = ratio is not None and ratio >= factor
        met = met and ok
        parts.append(f">= {factor:g}x {other}: {'met' if ok else 'missed'} ({_x(ratio)})")
    return {"target": "; ".join(parts), "met": met}


def cpu_target(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ratio = _ratio(found, "server_cpu_ms_per_call", FLOOR_FAST)
    ok = ratio is not None and ratio <= CPU_TARGET
    return {"target": f"<= {CPU_TARGET:g}x {FLOOR_FAST}: {'met' if ok else 'missed'} ({_x(ratio)})", "met": ok}


def _x(ratio: float | None) -> str:
    return "no figure" if ratio is None else f"{ratio:.2f}x"


def server_table(rows: list[dict[str, Any]], *, markdown: bool = False) -> str:
    """The capacity results one server a line (the issue's layout), from a run's rows."""
    header = ["server (same echo module)", "stack", "conns", "server CPU per call (ms)", "calls/s"]
    header += ["p50 (ms)", "p99 (ms)", "errors", "RSS (MiB)", "server busy (cores)"]
    lines = []
    for rate in (r for r in rows if r["workload"] == WORKLOAD and r["unit"] == "calls/s"):
        conns = str(rate["details"]["connections"])
        for name, label in rate["details"]["servers"].items():
            res = rate["details"][name]
            if "failed" in res:
                lines.append([label, "-", conns, "failed", res["failed"][:80], "", "", "", "", ""])
                continue
            lines.append(
                [
                    label,
                    _stack(res["native"]),
                    conns,
                    spread_cell(res, "server_cpu_ms_per_call", "{:.3f}"),
                    spread_cell(res, "calls_per_s", "{:,.0f}"),
                    spread_cell(res, "p50_ms", "{:.1f}"),
                    spread_cell(res, "p99_ms", "{:.1f}"),
                    str(res["errors"]),
                    f"{res['rss_mib']:.0f}" if res.get("rss_mib") else "-",
                    spread_cell(res, "server_cpu_util", "{:.2f}"),
                ]
            )
    return render_table(header, lines, markdown=markdown)


def render_table(header: list[str], lines: list[list[str]], *, markdown: bool) -> str:
    """Rows under ``header``: a Markdown table, or columns padded for a terminal."""
    if markdown:
        cells = [header, ["---"] * len(header), *lines]
        return "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in cells)
    widths = [max(len(x) for x in col) for col in zip(header, *lines, strict=False)]
    out = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) for line in lines]
    return "\n".join(out)


def _stack(native: dict[str, bool]) -> str:
    """The HTTP parser and event loop the server process had loaded."""
    if not native:
        return "-"
    return f"{'httptools' if native.get('httptools') else 'h11'} + {'uvloop' if native.get('uvloop') else 'asyncio'}"


def spread_cell(result: dict[str, Any], key: str, fmt: str) -> str:
    """``result[key]`` formatted, with the range of the rounds when they differ."""
    value, spread = result.get(key), result["spread"].get(key)
    if value is None:
        return "-"
    text = fmt.format(value)
    return f"{text} [{fmt.format(spread[0])}-{fmt.format(spread[1])}]" if spread and spread[0] != spread[1] else text


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.capacity``: this workload alone, both tables printed, results written."""
    from bench.capacity_options import add_capacity_options, capacity_overrides
    from bench.run import RESULTS, load_report, render_table, run

    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s")
    add_capacity_options(parser)
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON output path")
    parser.add_argument("--show", type=Path, metavar="JSON", help="print the tables of an earlier run; run nothing")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args(argv)
    if args.show is not None:
        report = load_report(args.show)
    else:
        report = run(
            ["capacity"],
            quick=args.quick,
            include_reference=False,
            output=args.output,
            verbose=False,
            overrides=capacity_overrides(args),
            command=" ".join(["python -m bench.capacity", *(argv if argv is not None else sys.argv[1:])]),
        )
    rows = [r for r in report["rows"] if r["workload"] == WORKLOAD]
    print(render_table(rows, markdown=args.markdown))
    print()
    print(server_table(rows, markdown=args.markdown))
    print(f"\n`{report['command']}`, {report['created']}, {report['machine']['cores']} cores")


if __name__ == "__main__":
    main()
