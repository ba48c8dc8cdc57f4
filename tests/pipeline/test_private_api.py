"""apcore's private API is used in one module only: ``src/apcore_mcp/_apcore.py``.

The fast pipeline borrows apcore's private helpers and fields where apcore offers no public way
(``docs/executor-fork.md``). With every such use in one module, an apcore release that changes
one breaks there, loudly, and the list of what we would ask apcore for stays short and true.

Every module under ``src/apcore_mcp`` is parsed with ``ast`` (nothing is imported). Outside
``_apcore.py`` these fail:

- importing a private apcore module or name (``from apcore.x import _y``, ``import apcore._x``);
- reading ``_name`` (not a dunder) from a name an apcore import bound (``apcore.x._y``), or
  reading one of apcore's own private fields or methods from any object but ``self``/``cls``
  (``executor._acl``);
- ``getattr``/``hasattr``/``setattr`` or a ``__dict__`` lookup with a literal ``_name`` that is
  one of apcore's own private fields or methods;
- ``self._name`` in a class built on an apcore class, for one of apcore's private names the
  class never sets itself (state inherited from apcore).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import apcore

SOURCE = Path(__file__).resolve().parents[2] / "src" / "apcore_mcp"
ALLOWED = SOURCE / "_apcore.py"
INTERNALS = "apcore_mcp._apcore"

PENDING: dict[str, set[str]] = {"bridge.py": {"_approval_handler"}}
"""Known uses waiting to move to ``_apcore.py`` (file relative to the package: names).

``bridge.py`` reads an Executor's approval handler itself; the change that makes it call
``_apcore.executor_approval_handler`` is under way. Remove the entry when it lands.
"""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@cache
def apcore_private_names() -> frozenset[str]:
    """Private attribute and method names apcore's own classes define (``self._x = ...``, ``def _x``)."""
    names: set[str] = set()
    for path in Path(apcore.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                        names.add(item.name)
    return frozenset(names)


def _is_apcore(module: str) -> bool:
    return module == "apcore" or module.startswith("apcore.")


def _bound_names(tree: ast.Module) -> set[str]:
    """Names an import of apcore (or of ``_apcore``, which re-exports apcore) binds in the module."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names if _is_apcore(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.module and (_is_apcore(node.module) or node.module == INTERNALS):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def _literal_name(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _own_fields(cls: ast.ClassDef) -> set[str]:
    """What a class sets or defines itself: ``self.x = ...``, class-level names, methods."""
    own: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            own.add(node.name)
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
            own.add(item.target.id)
        elif isinstance(item, ast.Assign):
            own.update(target.id for target in item.targets if isinstance(target, ast.Name))
    return own


def private_uses(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``(line, name)`` of each use of a private apcore name in one module."""
    apcore_private = apcore_private_names()
    bound = _bound_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield from ((node.lineno, name) for name in _private_imports(node))
        elif isinstance(node, ast.Attribute) and _reads_private(node, bound, apcore_private):
            yield node.lineno, node.attr
        elif isinstance(node, ast.Call | ast.Subscript):
            name = _looked_up(node)
            if name is not None and name in apcore_private:
                yield node.lineno, name
        elif isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in bound for b in node.bases):
            yield from _inherited_state(node, apcore_private)


def _private_imports(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names if _is_apcore(alias.name)]
        yield from (name for name in modules if any(_private(part) for part in name.split(".")))
    elif node.module and _is_apcore(node.module):
        if any(_private(part) for part in node.module.split(".")):
            yield node.module
        yield from (alias.name for alias in node.names if _private(alias.name))


def _reads_private(node: ast.Attribute, bound: set[str], apcore_private: frozenset[str]) -> bool:
    """``apcore.x._y`` (through an apcore import), or apcore's own ``_field`` read from another object."""
    if not _private(node.attr):
        return False
    base = node.value
    while isinstance(base, ast.Attribute):
        base = base.value
    if isinstance(base, ast.Name) and base.id in bound:
        return True
    on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
    return node.attr in apcore_private and not on_self


def _looked_up(node: ast.Call | ast.Subscript) -> str | None:
    """The literal name of ``getattr(x, "_n")`` (``hasattr``, ``setattr``), ``x.__dict__.get("_n")`` or ``["_n"]``."""
    if isinstance(node, ast.Subscript):
        on_dict = isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__"
        return _literal_name(node.slice) if on_dict else None
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1:
        return _literal_name(node.args[1])
    on_dict = (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__"
    )
    return _literal_name(node.args[0]) if on_dict and node.args else None


def _inherited_state(cls: ast.ClassDef, apcore_private: frozenset[str]) -> Iterator[tuple[int, str]]:
    own = _own_fields(cls)
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in apcore_private
            and node.attr not in own
        ):
            yield node.lineno, node.attr


def uses_outside_internals() -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if path == ALLOWED:
            continue
        uses = sorted(set(private_uses(ast.parse(path.read_text(encoding="utf-8")))))
        if uses:
            found[str(path.relative_to(SOURCE))] = uses
    return found


def test_private_apcore_names_appear_only_in_internals() -> None:
    found = uses_outside_internals()
    unexpected = {
        path: [(line, name) for line, name in uses if name not in PENDING.get(path, set())]
        for path, uses in found.items()
    }
    assert {path: uses for path, uses in unexpected.items() if uses} == {}


def test_the_check_sees_each_kind_of_use() -> None:
    source = """
from apcore.builtin_steps import _resolve_redaction
import apcore._hidden
from apcore import Executor
from apcore_mcp._apcore import BuiltinExecute

def acl_of(executor):
    return getattr(executor, "_acl", None)

def handler_of(executor):
    return executor._approval_handler

def rules_of(step):
    return step.__dict__.get("_redaction")

class Step(BuiltinExecute):
    def timeout(self):
        return self._default_timeout

class Ours(BuiltinExecute):
    def __init__(self):
        self._pool = None
    def pool(self):
        return self._pool

Executor._call_async_impl
"""
    names = sorted({name for _, name in private_uses(ast.parse(source))})
    expected = ["_acl", "_approval_handler", "_call_async_impl", "_default_timeout", "_redaction", "_resolve_redaction"]
    assert names == [*expected, "apcore._hidden"]


def test_internals_itself_holds_private_uses() -> None:
    """The check reads what it should: the one allowed module is full of them."""
    names = {name for _, name in private_uses(ast.parse(ALLOWED.read_text(encoding="utf-8")))}
    assert {"_convert_validation_errors", "_registry", "_default_timeout", "_acl", "_approval_handler"} <= names
