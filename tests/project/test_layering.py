"""Imports flow one way, down the rooms drawn in docs/architecture.md: ``run/``, ``http/``,
``bridge/``, the edges (``upstream/``, ``replicas/``, ``mcp/``), then the core's own rooms
(``tasks/``, ``pipeline/``, ``openai/``, ``settings/``, ``calls/``, ``tools/``) and the leaves.

Every module under ``src/apcore_mcp`` is parsed with ``ast`` (nothing is imported). An import
of ``a.b`` counts as an edge to ``a.b`` only, not to the packages above it, and
``from a import b`` as an edge to the submodule ``a.b`` when there is one. Imports under
``if TYPE_CHECKING:`` are for the type checker only and never count. Imports inside functions
(lazy) count for the layering rules but not for cycles, since they run after every module has
loaded. ``python tests/project/test_layering.py`` prints the figures.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = "apcore_mcp"
SOURCE = Path(__file__).resolve().parents[2] / "src" / ROOT

KNOWN_CYCLES: set[tuple[str, ...]] = set()
"""Cycles among module-level imports, each from its least module name: none left."""


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    lazy: bool  # inside a function: runs after every module has loaded


@cache
def module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(body: list[ast.stmt], lazy: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, lazy
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.orelse, lazy)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _import_nodes(node.body, lazy=True)
        else:  # class bodies, try/with/if blocks, loops: whatever nests statements
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, []):
                    nested = child.body if isinstance(child, ast.ExceptHandler | ast.match_case) else [child]
                    yield from _import_nodes(nested, lazy)


def _resolve(package: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def imports() -> list[Import]:
    """Every import of one of our own modules, by every module of the package."""
    names = module_names()
    found: list[Import] = []
    for source, path in names.items():
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, lazy in _import_nodes(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(package, node)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in names else base for alias in node.names]
            for target in dict.fromkeys(targets):
                if target == ROOT or target.startswith(ROOT + "."):
                    found.append(Import(source, target, node.lineno, lazy))
    return found


ROOMS_DOC = SOURCE.parent.parent / "docs" / "architecture.md"

PUBLIC_FACES = {f"{ROOT}.context": "calls"}
"""Root modules that are a room's public face, re-exporting it: they belong to that room."""


def layer(module: str) -> str:
    """The room of a module: its subpackage's name, a public face's room, or ``leaves`` for the
    package root's own modules (``_``-prefixed, ``types``)."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and module_names()[module].name == "__init__.py"):
        return parts[1]
    return PUBLIC_FACES.get(module, "leaves")


MAY_IMPORT: dict[str, set[str]] = {
    "testing": {"run", "http", "bridge", "upstream", "replicas", "mcp", "settings", "calls", "tools"},
    "run": {"http", "bridge", "upstream", "replicas", "mcp", "tasks", "pipeline", "settings", "calls", "tools"},
    "http": {"bridge", "upstream", "replicas", "mcp", "tasks", "pipeline", "openai", "settings", "calls", "tools"},
    "bridge": {"upstream", "replicas", "mcp", "tasks", "pipeline", "openai", "settings", "calls", "tools"},
    "upstream": {"settings", "calls", "tools"},
    "replicas": {"mcp", "tasks", "settings", "calls", "tools"},
    "mcp": {"tasks", "settings", "calls", "tools"},
    "tasks": {"calls", "tools"},
    "pipeline": {"calls", "tools"},
    "openai": {"tools"},
    "settings": {"calls"},  # only calls.principal: see test_the_settings_import_downward_only
    "calls": {"tools"},
    "tools": set(),
    "leaves": set(),
}
"""The rooms each room may import (besides its own modules and the leaves): the drawing of
docs/architecture.md, top to bottom. ``tools`` imports no ``calls``, ``calls`` no ``tasks``,
``openai`` reads ``tools`` only, and no edge imports ``bridge`` or what is above it."""


ENTRY_POINTS = {ROOT, f"{ROOT}.__main__"}
"""``import apcore_mcp`` and ``python -m apcore_mcp``: above every room, so they may import any."""

TESTS = SOURCE.parent.parent / "tests"
TESTS_BEYOND_THE_ROOMS = {"hostile", "interop", "deploy", "project", "cases"}
"""Test directories that are not a source room: the attack run, independent clients and the
conformance suites, the deployment files, the repository itself, the declarative cases."""

MAX_FILE_LINES = 450
"""No module, of the package or of the tests, is longer: split it by concept."""

MAX_LOOSE_PUBLIC = 6
"""Public modules the package root may hold besides ``__init__``, ``__main__`` and ``types``."""


def against_layering(found: list[Import]) -> list[Import]:
    """Imports of a room the importing room may not import."""
    return [
        i
        for i in found
        if i.source not in ENTRY_POINTS
        and layer(i.target) not in {layer(i.source), "leaves", *MAY_IMPORT[layer(i.source)]}
    ]


def cycles(found: list[Import]) -> set[tuple[str, ...]]:
    """Each elementary cycle among module-level imports, rotated to start at its least name."""
    graph: dict[str, set[str]] = {}
    for i in found:
        if not i.lazy and i.source != i.target:
            graph.setdefault(i.source, set()).add(i.target)
    found_cycles: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target == start:
                found_cycles.add(tuple(path))
            elif target > start and target not in path:
                walk(start, target, [*path, target])

    for start in sorted(graph):
        walk(start, start, [start])
    return found_cycles


def test_http_does_not_import_run() -> None:
    upward = [i for i in imports() if layer(i.source) == "http" and layer(i.target) == "run"]
    assert upward == []


def test_no_import_goes_against_the_layering() -> None:
    assert [f"{i.source}:{i.line} -> {i.target}" for i in against_layering(imports())] == []


def test_nothing_imports_the_package_root() -> None:
    rooted = [i for i in imports() if i.target == ROOT and i.source != ROOT]
    assert rooted == []


def test_no_new_import_cycle() -> None:
    assert cycles(imports()) == KNOWN_CYCLES


def test_the_graph_sees_known_edges() -> None:
    # The parser itself: a module-level, a lazy, a from-submodule and a TYPE_CHECKING-only import.
    found = {(i.source, i.target): i for i in imports()}
    assert not found[("apcore_mcp.run.serve", "apcore_mcp.run.serving")].lazy
    assert found[("apcore_mcp.bridge.service", "apcore_mcp.replicas.shared")].lazy
    assert ("apcore_mcp.tools.records", "apcore_mcp.tools.behaviour") in found
    assert ("apcore_mcp.bridge.upstreams", "apcore_mcp.http.toolsets") not in found
    assert cycles([Import("a", "b", 1, False), Import("b", "a", 1, False)]) == {("a", "b")}


def test_the_settings_import_downward_only() -> None:
    """The settings import their own modules, the leaves and one module of the call path (the
    parsers of scopes and keys), never the server or the limits."""
    found = imports()
    outside = [
        i
        for i in found
        if layer(i.source) == "settings"
        and layer(i.target) not in {"settings", "leaves"}
        and i.target != f"{ROOT}.calls.principal"
    ]
    assert outside == []


def test_the_check_fails_on_a_violation() -> None:
    inward = [
        Import(f"{ROOT}.tools.records", f"{ROOT}.calls.router", 1, lazy=True),
        Import(f"{ROOT}.calls.router", f"{ROOT}.tasks.runner", 1, lazy=False),
        Import(f"{ROOT}.openai", f"{ROOT}.calls.errors", 1, lazy=False),
        Import(f"{ROOT}.mcp.server", f"{ROOT}.bridge.core", 1, lazy=False),
    ]
    assert against_layering(inward) == inward
    assert against_layering([Import(f"{ROOT}.calls.router", f"{ROOT}.tools.records", 1, lazy=False)]) == []


def rooms() -> set[str]:
    return {path.parent.name for path in SOURCE.glob("*/__init__.py")}


def test_every_room_has_its_rules() -> None:
    assert rooms() == set(MAY_IMPORT) - {"leaves"}


def test_the_architecture_page_names_every_room_and_only_rooms() -> None:
    """Its drawing and its table name rooms as ``name/``: each exists, and none is left out."""
    text = ROOMS_DOC.read_text(encoding="utf-8")
    table = {m for m in re.findall(r"^\| `([a-z_]+)/` \|", text, re.MULTILINE)}
    assert table == rooms()
    drawn = text.split("```text", 1)[1].split("```", 1)[0]
    assert set(re.findall(r"\b([a-z]+)/", drawn)) == rooms()


def test_the_package_root_holds_few_public_modules() -> None:
    loose = {p.stem for p in SOURCE.glob("*.py")} - {"__init__", "__main__", "types"}
    public = {name for name in loose if not name.startswith("_")}
    assert len(public) <= MAX_LOOSE_PUBLIC, sorted(public)
    assert all(name in PUBLIC_FACES for name in (f"{ROOT}.{n}" for n in public)), sorted(public)


def test_the_tests_mirror_the_rooms() -> None:
    """Every test file is in the directory of the room it tests, or one of the few beyond them."""
    assert sorted(path.name for path in TESTS.glob("test_*.py")) == []
    homes = {path.relative_to(TESTS).parts[0] for path in [*TESTS.rglob("test_*.py"), *TESTS.rglob("*.mcp.yaml")]}
    assert homes - rooms() - TESTS_BEYOND_THE_ROOMS == set()


def test_no_module_is_longer_than_the_limit() -> None:
    found = {
        str(path.relative_to(TESTS.parent)): lines
        for path in [*SOURCE.rglob("*.py"), *TESTS.rglob("*.py")]
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert found == {}


def main() -> None:
    found = imports()
    against = against_layering(found)
    print(f"modules: {len(module_names())}, import edges: {len(found)} ({sum(i.lazy for i in found)} lazy)")
    print(f"edges against the layering: {len(against)}")
    for i in against:
        print(f"  {i.source}:{i.line} -> {i.target}{' (lazy)' if i.lazy else ''}")
    print(f"cycles among module-level imports: {len(cycles(found))}")
    for cycle in sorted(cycles(found)):
        print("  " + " -> ".join(cycle))
    print("package root imported by:", [i.source for i in found if i.target == ROOT and i.source != ROOT])


if __name__ == "__main__":
    main()
