"""``python -m bench``: run the workloads, print one table, write ``bench/results/latest.json``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.capacity_options import add_capacity_options, capacity_overrides
from bench.common import BENCH_DIR, ensure_ref_venv, machine_info
from bench.rows import Config
from bench.throughput import ROUTES
from bench.workloads import WORKLOADS

RESULTS = BENCH_DIR / "results" / "latest.json"


def make_config(
    workdir: Path, *, quick: bool, include_reference: bool, log: Path | None, routes: list[str] | None = None
) -> Config:
    cfg = _sized_config(workdir, quick=quick, include_reference=include_reference, log=log)
    if routes:
        cfg.transports = tuple(routes)
    return cfg


def _sized_config(workdir: Path, *, quick: bool, include_reference: bool, log: Path | None) -> Config:
    if quick:
        return Config(
            workdir=workdir,
            sizes=(10, 100),
            include_reference=include_reference,
            reps=2,
            calls=300,
            roundtrip_calls=100,
            duration=2.0,
            throughput_rounds=2,
            client_counts=(1, 10),
            startup_reps=1,
            upstream_calls=300,
            upstream_rounds=3,
            search_sizes=(1000,),
            search_calls=200,
            capacity_rounds=1,
            capacity_seconds=1,
            workers_rounds=1,
            workers_seconds=1,
            log=log,
        )
    return Config(workdir=workdir, include_reference=include_reference, log=log)


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) >= 0.01 else f"{value:.4f}"
    return str(value)


def _with_spread(value: Any, spread: list[float] | None) -> str:
    """A median with the range of the rounds it comes from: ``262 [251-270]``."""
    if not spread:
        return _num(value)
    return f"{_num(value)} [{_num(spread[0])}-{_num(spread[1])}]"


def render_table(rows: list[dict[str, Any]], *, markdown: bool = False) -> str:
    header = ["workload", "metric", "unit", "ours", "reference(s)", "ratio (ours/ref)", "target met?"]
    lines = []
    for r in rows:
        spread = r.get("spread") or {}
        refs = "; ".join(f"{name} {_with_spread(v, spread.get(name))}" for name, v in r["references"].items())
        ratios = "; ".join(f"{_num(v)}x {name}" for name, v in r["ratio"].items() if v is not None)
        verdict = ("yes" if r["met"] else "NO") + f" ({r['target']})" if r["target"] else ""
        ours = _with_spread(r["ours"], spread.get("ours"))
        lines.append([r["workload"], r["metric"], r["unit"], ours, refs or "-", ratios or "-", verdict])
    if markdown:
        cells = [header, ["---"] * len(header), *lines]
        return "\n".join("| " + " | ".join(str(c).replace("|", "\\|") for c in line) + " |" for line in cells)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]
    out = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=False)) for line in lines]
    return "\n".join(out)


def run(
    only: list[str] | None,
    *,
    quick: bool,
    include_reference: bool,
    output: Path,
    verbose: bool,
    routes: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Run the workloads; ``overrides`` sets Config fields (e.g. ``capacity_rounds``) after sizing;
    ``command`` is what the report says produced it (default: this ``python -m bench`` command)."""
    if include_reference:
        ensure_ref_venv()
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="apcore-mcp-bench-") as tmp:
        workdir = Path(tmp)
        log = workdir / "servers.log"
        cfg = make_config(workdir, quick=quick, include_reference=include_reference, log=log, routes=routes)
        for key, value in (overrides or {}).items():
            setattr(cfg, key, value)
        for name, workload in WORKLOADS.items():
            if only and name not in only:
                continue
            t0 = time.monotonic()
            if verbose:
                print(f"[bench] {name} ...", file=sys.stderr, flush=True)
            rows += workload(cfg)
            timings[name] = round(time.monotonic() - t0, 1)
        server_log = log.read_text(errors="replace")[-20000:] if log.exists() else ""
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command or " ".join(["python -m bench", *sys.argv[1:]]),
        "quick": quick,
        "machine": machine_info(),
        "config": {
            "sizes": list(cfg.sizes),
            "duration_s": cfg.duration,
            "throughput_rounds": cfg.throughput_rounds,
            "client_counts": list(cfg.client_counts),
            "transports": list(cfg.transports),
            "calls": cfg.calls,
            "reps": cfg.reps,
            "capacity": {
                "rounds": cfg.capacity_rounds,
                "seconds": cfg.capacity_seconds,
                "connections": list(cfg.capacity_connections),
            },
        },
        "seconds": {**timings, "total": round(time.monotonic() - started, 1)},
        "rows": rows,
        "server_log_tail": server_log,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, default=str))
    return report


def load_report(path: Path) -> dict[str, Any]:
    """The report of an earlier run.

    Raises:
        SystemExit: no readable report at ``path``, with one line saying so (exit status 1).
    """
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"no results at {path}: run python -m bench first (or --output to write them there)") from None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read results at {path}: {exc}") from None
    if not isinstance(report, dict) or not {"rows", "machine", "seconds"} <= report.keys():
        raise SystemExit(f"{path} is not a report of python -m bench")
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, short durations")
    parser.add_argument(
        "--only", action="append", choices=sorted(WORKLOADS), metavar="WORKLOAD", help=f"one of {sorted(WORKLOADS)}"
    )
    parser.add_argument(
        "--route",
        action="append",
        choices=sorted(ROUTES),
        help="throughput: only this transport and protocol era (repeatable; default: all)",
    )
    add_capacity_options(parser)
    parser.add_argument("--no-reference", action="store_true", help="skip apcore-mcp 0.23.3 (no venv, no download)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON output path")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--show", type=Path, metavar="JSON", help="print the table of an earlier run; run nothing")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if args.show is not None:
        report = load_report(args.show)
    else:
        report = run(
            args.only,
            quick=args.quick,
            include_reference=not args.no_reference,
            output=args.output,
            verbose=not args.quiet,
            routes=args.route,
            overrides=capacity_overrides(args),
        )
    print(render_table(report["rows"], markdown=args.markdown))
    machine = report["machine"]
    print(
        f"\n{machine['cpu_model']}, {machine['cores']} cores, Python {machine['python']}; "
        f"{report['seconds']['total']} s; `{report['command']}`, {report['created']}"
    )


if __name__ == "__main__":
    main()
