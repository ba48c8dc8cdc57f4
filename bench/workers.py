"""Workload 16 (workers, issue 31): what a second worker process adds on this two-core machine.

The capacity workload's wrk load (``bench/capacity.lua``: one 2026-07-28 ``tools/call`` repeated
over keep-alive connections, every reply checked) against each server at 1 and at 2 worker
processes, for two modules: ``bench.echo`` (the text back: the server's own cost per call) and
``bench.cpu5ms`` (a sync module spending 5 ms of CPU in Python per call: a module's work, which
one process runs one call at a time under the GIL). Servers: ours as the CLI starts it
(``apcore-mcp --workers N``) and FastMCP 4.2.3 as its deployment guide scales it (the stateless
ASGI app, ``http_app(stateless_http=True)``, under ``uvicorn --workers N``; its own venv).

Each round starts every server afresh (which worker the kernel gives each connection is drawn
again), in an order rotating between rounds. Per cell: median calls/s with the range of the
rounds, the 2-worker/1-worker ratio, server CPU per call summed over every process of the server
(supervisor and workers), p50/p99 (wrk's), errors, the server's and wrk's CPU in cores, and the
busiest worker's share of the server's CPU (0.5 is an even split of two). wrk runs on the same
two cores: at 2 workers it competes with them, and its CPU is printed beside theirs.

    python -m bench --only workers                 # 3 rounds x 3 s per module (~2 min)
    python -m bench.workers --rounds 5 --seconds 5 # prints the side-by-side table too
    python -m bench.workers --show bench/results/latest.json --markdown
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.capacity import render_table, spread_cell
from bench.capacity_servers import (
    FASTMCP,
    FASTMCP_PYTHON,
    REQUEST,
    check_reply,
    ensure_fastmcp_venv,
    process_tree,
    serving,
)
from bench.common import BENCH_DIR, CLK_TCK, ServerSpec, cpu_seconds
from bench.modules import CPU_ID, ECHO_ID, add_cpu_module, make_extensions
from bench.rows import OURS, Config, row
from bench.wrk import Load, run_wrk

WORKLOAD = "16 workers"
SERVERS = (OURS, FASTMCP)
LABELS = {
    OURS: "apcore-mcp --workers N (CLI)",
    FASTMCP: "FastMCP 4.2.3, http_app(stateless_http=True) under uvicorn --workers N",
}
COUNTS = (1, 2)
MODULES = (ECHO_ID, CPU_ID)
GOALS = {ECHO_ID: 1.3, CPU_ID: 1.6}  # 2-worker calls/s over 1-worker calls/s, ours
# One wrk thread (bench.wrk), 16 connections: enough that 2 workers each get several when the
# kernel spreads them, few enough that a 5 ms call's queue stays short.
CONNECTIONS = 16
WARMUP_SECONDS = 1
TEXT = "workers-echo-51c3"
FIGURES = (
    *("calls_per_s", "server_cpu_ms_per_call", "p50_ms", "p99_ms"),
    *("server_cpu_util", "wrk_cpu_util", "busiest_share", "others_cpu_util"),
)
ERRORS = ("non2xx", "bad_replies", "connect", "read", "write", "timeout")

Key = tuple[str, int, str]
"""(server, workers, module)."""


def cell_name(key: Key) -> str:
    return f"{key[0]} x{key[1]} {key[2]}"


def extensions(cfg: Config) -> Path:
    """``bench.echo`` and ``bench.cpu5ms``, nothing else (every server here serves these two)."""
    return add_cpu_module(make_extensions(cfg.workdir / "workers-ext", 0))


def server_spec(name: str, workers: int, ext: Path) -> ServerSpec:
    if name == OURS:
        args = ["-m", "apcore_mcp", "--extensions-dir", str(ext), "--log-level", "WARNING"]
        return ServerSpec(OURS, sys.executable, [*args, "--workers", str(workers)])
    return ServerSpec(FASTMCP, str(FASTMCP_PYTHON), [str(BENCH_DIR / "fastmcp_server.py"), "--workers", str(workers)])


def load(port: int, tool: str) -> Load:
    """The capacity request for ``tool``, echoing ``TEXT``; a correct reply carries it as a JSON member."""
    body: dict[str, Any] = copy.deepcopy(REQUEST)
    body["params"]["name"], body["params"]["arguments"] = tool, {"text": TEXT}
    expect = '"text"%s*:%s*"' + TEXT.replace("-", "%-") + '"'
    return Load(f"http://127.0.0.1:{port}/mcp", tool, json.dumps(body, separators=(",", ":")), expect)


def process_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of ``pid`` and of each live descendant."""
    found = {}
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            found[member] = cpu_seconds(member)
    return found


def wait_workers(pid: int, workers: int, deadline_s: float = 60.0) -> None:
    """Return once ``pid`` has its workers (a supervisor has them as children) and they are idle.

    The port answers as soon as the first worker listens; a worker still importing or building
    its app would get none of wrk's connections (they open at the start of a run) and then be
    measured idle. So: every worker there, then the server's CPU quiet (< 10%) for half a second.
    """
    deadline = time.monotonic() + deadline_s
    while workers > 1 and len(process_tree(pid)) < 1 + workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{workers} workers not started after {deadline_s:g} s")
        time.sleep(0.1)
    last = sum(process_cpu(pid).values())
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(process_cpu(pid).values())
        if now - last < 0.05:
            return
        last = now
    raise TimeoutError(f"the server's {workers} worker(s) still busy starting after {deadline_s:g} s")


def machine_busy_seconds() -> float:
    """CPU seconds every process of the machine has spent (all cores, /proc/stat), idle and iowait excluded."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / CLK_TCK


def measure_once(pid: int, port: int, tool: str, seconds: int) -> dict[str, Any]:
    """One wrk run: its figures, and the CPU of every process of the server over the same run."""
    before, busy0, t0 = process_cpu(pid), machine_busy_seconds(), time.monotonic()
    w = run_wrk(load(port, tool), connections=CONNECTIONS, seconds=seconds)
    after, busy, wall = process_cpu(pid), machine_busy_seconds() - busy0, time.monotonic() - t0
    spent = {member: after[member] - before.get(member, 0.0) for member in after}
    cpu = sum(spent.values())
    calls = w["replies"] - w["non200"] - w["bad"]  # correct results only
    errors = {"non2xx": w["non200"], "bad_replies": w["bad"], **{k: w[k] for k in ERRORS[2:]}}
    return {
        "calls": calls,
        "calls_per_s": calls / (w["duration_us"] / 1e6),
        "server_cpu_ms_per_call": cpu / calls * 1000 if calls else None,
        "p50_ms": w["p50_us"] / 1000,
        "p99_ms": w["p99_us"] / 1000,
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "server_cpu_util": cpu / wall,
        "wrk_cpu_util": w["wrk_cpu_s"] / wall,
        # What else ran on the machine meanwhile (other engineers' tests, the bench itself): a
        # figure taken while others held a core is not this server's capacity.
        "others_cpu_util": max(0.0, busy - cpu - w["wrk_cpu_s"]) / wall,
        "busiest_share": max(spent.values()) / cpu if cpu > 0 else None,
        "processes": len(after),
    }


Samples = dict[Key, list[dict[str, Any]]]


def measure(cfg: Config, names: list[str], broken: dict[str, str]) -> Samples:
    """Every server at 1 and 2 workers, both modules, ``cfg.workers_rounds`` rounds, interleaved."""
    ext = extensions(cfg)
    cells = [(name, count) for name in names for count in COUNTS]
    samples: Samples = {}
    for round_ in range(cfg.workers_rounds):
        shift = round_ % len(cells)
        for name, count in cells[shift:] + cells[:shift]:
            done: dict[str, dict[str, Any]] = {}
            failure = broken.get(name)
            if failure is None:
                try:
                    with serving(server_spec(name, count, ext), log=cfg.log) as (pid, port):
                        wait_workers(pid, count)
                        check_reply(port)  # a correct result before anything is timed
                        run_wrk(load(port, ECHO_ID), connections=CONNECTIONS, seconds=WARMUP_SECONDS)
                        for tool in MODULES:
                            done[tool] = measure_once(pid, port, tool, cfg.workers_seconds)
                except Exception as exc:
                    failure = f"{type(exc).__name__}: {str(exc)[-500:]}"
            for tool in MODULES:
                samples.setdefault((name, count, tool), []).append(done.get(tool) or {"failed": failure})
    return samples


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds (with their range), errors summed; a failed round counts as an error."""
    good = [run for run in runs if "failed" not in run]
    failed = [run["failed"] for run in runs if "failed" in run]
    if not good:
        return {"failed": failed[-1] if failed else "not run", "rounds": 0, "errors": len(failed), "spread": {}}
    merged: dict[str, Any] = {
        "rounds": len(good),
        "failed_rounds": failed,
        "calls": sum(run["calls"] for run in good),
        "errors": sum(run["errors"] for run in good) + len(failed),
        "error_kinds": {k: sum(run["error_kinds"][k] for run in good) for k in ERRORS},
        "processes": good[0]["processes"],
        "spread": {},
    }
    for key in FIGURES:
        values = [run[key] for run in good if isinstance(run.get(key), int | float)]
        merged[key] = statistics.median(values) if values else None
        if values:
            merged["spread"][key] = [min(values), max(values)]
    return merged


def ratio(found: dict[Key, dict[str, Any]], server: str, tool: str) -> float | None:
    """Calls/s at 2 workers over calls/s at 1."""
    one, two = found.get((server, 1, tool), {}).get("calls_per_s"), found.get((server, 2, tool), {}).get("calls_per_s")
    return two / one if one and two is not None else None


def workers(cfg: Config) -> list[dict[str, Any]]:
    names = [name for name in SERVERS if cfg.workers_servers is None or name in cfg.workers_servers]
    broken: dict[str, str] = {}
    if FASTMCP in names:
        try:
            ensure_fastmcp_venv()
        except Exception as exc:  # no package index: the row says so, ours still runs
            broken[FASTMCP] = f"cannot create FastMCP's venv ({FASTMCP_PYTHON}): {type(exc).__name__}: {exc}"
    found = {key: merge(runs) for key, runs in measure(cfg, names, broken).items()}
    cells = [{"server": s, "workers": n, "module": m, **found[(s, n, m)]} for s, n, m in found]
    label = f"2026-07-28 tools/call via wrk, {CONNECTIONS} connections, median of {cfg.workers_rounds} rounds"
    others = [name for name in names if name != OURS]
    rows = []
    for tool in MODULES:
        mine = ratio(found, OURS, tool)
        ok = mine is not None and mine >= GOALS[tool]
        rows.append(
            row(
                WORKLOAD,
                f"calls/s at 2 workers over 1 worker, {tool}, {label}",
                "x",
                mine,
                {name: ratio(found, name, tool) for name in others},
                target=f">= {GOALS[tool]:g}x: {'met' if ok else 'missed'}",
                met=ok,
            )
        )
        rows += [figure_row(found, names, tool, key, metric, unit, label) for key, metric, unit in FIGURE_ROWS]
    rows.append(
        row(
            WORKLOAD,
            f"errors (non-2xx, socket, bad replies, failed rounds), every cell, {label}",
            "count",
            float(sum(found[key]["errors"] for key in found if key[0] == OURS)),
            {name: float(sum(found[key]["errors"] for key in found if key[0] == name)) for name in others},
            target="0 errors",
            met=all(found[key]["errors"] == 0 for key in found if key[0] == OURS),
            details={cell_name(key): r.get("error_kinds") or r.get("failed") for key, r in found.items()},
        )
    )
    rows[0]["details"] = {"connections": CONNECTIONS, "servers": {n: LABELS[n] for n in names}, "cells": cells}
    return rows


FIGURE_ROWS = (
    ("calls_per_s", "calls/s", "calls/s"),
    ("server_cpu_ms_per_call", "server CPU per call (every process of the server)", "ms"),
)


def figure_row(
    found: dict[Key, dict[str, Any]], names: list[str], tool: str, key: str, metric: str, unit: str, label: str
) -> dict[str, Any]:
    """Ours at 2 workers against ours at 1 and each other server at 1 and 2."""
    cells = [(name, count) for name in names for count in COUNTS if (name, count) != (OURS, 2)]
    mine = found.get((OURS, 2, tool), {})
    return row(
        WORKLOAD,
        f"{metric}, {OURS} at 2 workers, {tool}, {label}",
        unit,
        mine.get(key),
        {f"{name} x{count}": found[(name, count, tool)].get(key) for name, count in cells},
        spread={
            f"{name} x{count}" if (name, count) != (OURS, 2) else OURS: found[(name, count, tool)]["spread"][key]
            for name in names
            for count in COUNTS
            if key in found[(name, count, tool)].get("spread", {})
        },
    )


def workers_table(rows: list[dict[str, Any]], *, markdown: bool = False) -> str:
    """Server x workers x module side by side, from a run's rows."""
    header = ["server", "workers", "module", "calls/s", "2w/1w", "server CPU per call (ms)", "p50 (ms)", "p99 (ms)"]
    header += ["errors", "server CPU (cores)", "busiest worker", "wrk CPU (cores)", "others' CPU (cores)"]
    first = next((r for r in rows if r["workload"] == WORKLOAD and "cells" in r["details"]), None)
    cells = first["details"]["cells"] if first else []
    rates = {(c["server"], c["workers"], c["module"]): c.get("calls_per_s") for c in cells}
    lines = []
    for c in cells:
        name = c["server"]
        if "failed" in c:
            lines.append([name, str(c["workers"]), c["module"], "failed: " + c["failed"][:80], *[""] * 9])
            continue
        one = rates.get((c["server"], 1, c["module"]))
        gain = f"{c['calls_per_s'] / one:.2f}x" if c["workers"] == 2 and one else ""
        lines.append(
            [
                name,
                str(c["workers"]),
                c["module"],
                spread_cell(c, "calls_per_s", "{:,.0f}"),
                gain,
                spread_cell(c, "server_cpu_ms_per_call", "{:.2f}"),
                spread_cell(c, "p50_ms", "{:.1f}"),
                spread_cell(c, "p99_ms", "{:.1f}"),
                str(c["errors"]),
                spread_cell(c, "server_cpu_util", "{:.2f}"),
                spread_cell(c, "busiest_share", "{:.2f}") if c["workers"] > 1 else "-",
                spread_cell(c, "wrk_cpu_util", "{:.2f}"),
                spread_cell(c, "others_cpu_util", "{:.2f}"),
            ]
        )
    return render_table(header, lines, markdown=markdown)


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.workers``: this workload alone, both tables printed, results written."""
    from bench.run import RESULTS, load_report, render_table, run

    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s")
    parser.add_argument("--rounds", type=_positive, help="interleaved rounds (default 3)")
    parser.add_argument("--seconds", type=_positive, help="seconds of each wrk run (default 3)")
    parser.add_argument("--server", action="append", choices=SERVERS, help="only this server (repeatable)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON output path")
    parser.add_argument("--show", type=Path, metavar="JSON", help="print the tables of an earlier run; run nothing")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args(argv)
    if args.show is not None:
        report = load_report(args.show)
    else:
        overrides: dict[str, Any] = {"workers_servers": args.server}
        if args.rounds:
            overrides["workers_rounds"] = args.rounds
        if args.seconds:
            overrides["workers_seconds"] = args.seconds
        report = run(
            ["workers"],
            quick=args.quick,
            include_reference=False,
            output=args.output,
            verbose=False,
            overrides=overrides,
            command=" ".join(["python -m bench.workers", *(argv if argv is not None else sys.argv[1:])]),
        )
    rows = [r for r in report["rows"] if r["workload"] == WORKLOAD]
    print(render_table(rows, markdown=args.markdown))
    print()
    print(workers_table(rows, markdown=args.markdown))
    machine = report["machine"]
    print(f"\n`{report['command']}`, {report['created']}, {machine['cpu_model']}, {machine['cores']} cores")


if __name__ == "__main__":
    main()
