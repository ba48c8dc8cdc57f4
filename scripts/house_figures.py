"""The house's figures: module and function sizes, bare ``Any``, layering, and the path of ``serve()``.

    .venv/bin/python scripts/house_figures.py

- sizes: lines per module of ``src/apcore_mcp`` and per function (``def`` to its last line);
- bare ``Any``: annotations that are exactly ``Any`` (``dict[str, Any]`` for JSON does not count);
- layering: edges against the architecture page's order and import cycles (``tests/project/test_layering.py``);
- the path of ``serve(registry)`` over stdio (one module) with an empty stdin, start to finish: each run of
  calls in one module is a stay; a climb is a stay in a higher room than the one before it.
"""

from __future__ import annotations

import ast
import itertools
import os
import statistics
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "apcore_mcp"
sys.path.insert(0, str(ROOT))  # tests.project.test_layering, when run as a script

from tests.project.test_layering import against_layering, cycles, imports  # noqa: E402

ROOMS = {"run": 6, "http": 5, "bridge": 4, "mcp": 3, "upstream": 3, "replicas": 3, "testing": 3, "pipeline": 2}
"""Higher rooms depend on lower ones (the architecture page); top-level modules are the core (1)."""


def _quantiles(values: list[int]) -> tuple[float, int, int]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))], ordered[-1]


def sizes() -> None:
    modules: list[int] = []
    functions: list[int] = []
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text()
        modules.append(len(text.splitlines()))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                functions.append(node.end_lineno - node.lineno + 1)
    print("| lines of | count | median | p90 | max |\n| --- | --- | --- | --- | --- |")
    for name, values in (("module", modules), ("function", functions)):
        median, p90, largest = _quantiles(values)
        print(f"| {name} | {len(values)} | {median:g} | {p90} | {largest} |")


def bare_any() -> int:
    count = 0
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            annotations: list[ast.expr | None] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
                annotations = [a.annotation for a in every] + [node.returns]
            elif isinstance(node, ast.AnnAssign):
                annotations = [node.annotation]
            count += sum(isinstance(a, ast.Name) and a.id == "Any" for a in annotations)
    return count


def room(module: str) -> int:
    parts = module.split(".")
    return ROOMS.get(parts[1], 1) if len(parts) > 2 else 1


def serve_path() -> tuple[list[str], int]:
    from apcore import Registry

    from apcore_mcp import serve

    from tests._support.modules import Echo

    registry = Registry()
    registry.register("demo.echo", Echo())  # one module: the path, not the per-module loop
    stays: list[str] = []

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module.startswith("apcore_mcp") and (not stays or stays[-1] != module):
            stays.append(module)

    read, write = os.pipe()
    os.close(write)  # the client hangs up at once: serve() starts, sees EOF, and stops
    saved = os.dup(0)
    os.dup2(read, 0)
    sys.setprofile(profile)
    try:
        serve(registry)
    finally:
        sys.setprofile(None)
        os.dup2(saved, 0)
        os.close(read)
    climbs = sum(room(after) > room(before) for before, after in itertools.pairwise(stays))
    return stays, climbs


def main() -> None:
    sizes()
    print(f"\nbare Any annotations in src/: {bare_any()}")
    found = imports()
    print(f"import edges against the layering: {len(against_layering(found))}; cycles: {len(cycles(found))}")
    assert threading.current_thread() is threading.main_thread()
    stays, climbs = serve_path()
    visited = sorted(set(stays))
    print(f"\nserve(registry of one module) over stdio: {len(stays)} stays in {len(visited)} modules", end="")
    print(f", {climbs} climbs back up")
    counts = {module: stays.count(module) for module in visited}
    for module, times in sorted(counts.items(), key=lambda item: -item[1])[:5]:
        print(f"  {module}: entered {times} times")


if __name__ == "__main__":
    main()
