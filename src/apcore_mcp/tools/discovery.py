"""Discovering an extensions directory loudly: every file apcore skips is a WARNING naming it and why.

apcore's ``Registry.discover()`` never raises for a bad file: it logs a line about a module id
(sometimes a path) and moves on, and some lines mislead (a file holding a ``@module``-decorated
function is "No Module subclass found"). ``discover`` runs it with apcore's discovery loggers
captured, maps each skipped file to a ``ModuleProblem`` with the file, the module id and a reason
a module author can act on (with hints read from the file's syntax, never by running it again),
logs each once, and lets apcore's other lines through unchanged.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apcore import Registry
from apcore.errors import ModuleError, ModuleLoadError
from apcore.registry import registry as apcore_registry
from apcore.registry import scan_extensions
from apcore.registry import scanner as apcore_scanner

from apcore_mcp.tools.problems import DOCS_HINT, ModuleProblem, ModuleProblemsError, registry_problems

logger = logging.getLogger(__name__)

_LOGGERS: tuple[logging.Logger, ...] = (apcore_registry.logger, apcore_scanner.logger)
_SUMMARIES = frozenset(
    {"No modules successfully registered from %d discovered files", "No modules discovered"}
)  # apcore's totals, not about one file: said by our own start log
_MAX_DEPTH = "Max depth %d exceeded at %s, skipping"  # INFO in apcore, yet every file below is skipped
_MODULE_CLASS = (
    "apcore discovers one class per file with input_schema and output_schema "
    "(pydantic BaseModel classes) and an execute method"
)
_SCHEMAS = ("input_schema", "output_schema")
_SKIPPED_DIRS = ("__pycache__", "node_modules")  # as apcore's scanner
_STAGES = {
    "Module '%s' failed validation: %s": "it is not a valid module: {0}",
    "Skipping discovered module with invalid ID '%s': %s": (
        "its module id (the file's path, / becoming .) is not valid, rename the file: {0}"
    ),
    "Skipping module '%s': %s": "{0}",
    "Failed to instantiate module '%s': %s": "its class cannot be built with no arguments: {0}",
    "on_load() failed for module '%s': %s": "its on_load() failed: {0}",
    "Discover skipping '%s' — already registered or in-flight": "a module with this id is already registered",
    "Duplicate module ID '%s' at %s, already found at %s. Skipping.": "another file has the same module id: {1}",
    "Symlink target outside extension root, skipping: %s -> %s": "it links outside the extensions directory",
    _MAX_DEPTH: "it is deeper than apcore scans (8 directory levels): nothing below is discovered",
}
"""apcore 0.32's log lines about one skipped file, as a reason (``{0}``, ``{1}``: its arguments after the id).
A line not listed here still becomes a problem if it names a skipped file, with apcore's own words."""


class DiscoveryError(ValueError):
    """The extensions directory as a whole cannot be discovered (apcore raised)."""


@dataclass(frozen=True)
class Discovery:
    """What ``discover`` registered, and every file or module it skipped."""

    count: int
    problems: tuple[ModuleProblem, ...]


def discover(registry: Registry, extensions_dir: str | Path) -> Discovery:
    """``registry.discover()`` of ``extensions_dir``, each skipped file logged once as a WARNING.

    Raises:
        DiscoveryError: apcore refused the directory as a whole (e.g. a reserved ``ephemeral`` folder).
    """
    root = Path(extensions_dir)
    with _captured(keep=False):
        files = {found.canonical_id: found.file_path for found in scan_extensions(root)}
    with _captured(keep=True) as records:
        try:
            count = int(registry.discover())
        except ModuleError as exc:
            raise DiscoveryError(f"cannot discover {root}: {exc.message}") from None
    problems = _problems(records, registry, root, files) + _links(root)
    for problem in problems:
        logger.warning("Module not served: %s", problem)
    return Discovery(count, tuple(problems))


def refuse_problems(found: Discovery, registry: Registry) -> None:
    """``strict_modules``: a discovery that skipped anything fails with every problem of the registry too.

    Without discovery problems the bridge's own check (of the modules it serves) decides.

    Raises:
        ModuleProblemsError: listing the discovery's problems and those of every registered module.
    """
    if found.problems:
        raise ModuleProblemsError([*found.problems, *registry_problems(registry)])


@contextlib.contextmanager
def _captured(*, keep: bool) -> Iterator[list[logging.LogRecord]]:
    """apcore's discovery log records (from WARNING, and the depth line) held back; the rest pass.

    Held back whatever the configured level: a problem is found even when it would not be shown
    (``strict_modules`` with ``log_level=ERROR``); what passes still obeys the configured level.
    """
    records: list[logging.LogRecord] = []
    levels = {each: (each.level, each.getEffectiveLevel()) for each in _LOGGERS}

    def hold(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or record.msg == _MAX_DEPTH:
            if keep:
                records.append(record)
            return False
        return record.levelno >= levels[logging.getLogger(record.name)][1]

    for each, (_, effective) in levels.items():
        each.setLevel(min(effective, logging.INFO))
        each.addFilter(hold)
    try:
        yield records
    finally:
        for each, (level, _) in levels.items():
            each.removeFilter(hold)
            each.setLevel(level)


def _problems(
    records: list[logging.LogRecord], registry: Registry, root: Path, files: dict[str, Path]
) -> list[ModuleProblem]:
    problems: list[ModuleProblem] = []
    named: set[str] = set()
    for record in records:
        problem = _problem_of(record, registry, root, files)
        if problem is None:
            _release(record)
            continue
        if problem.module_id is not None:
            named.add(problem.module_id)
        problems.append(problem)
    for module_id, path in sorted(files.items()):
        if module_id not in named and not registry.has(module_id):
            unexplained = "apcore did not register it and logged no reason"
            problems.append(ModuleProblem(unexplained, module_id, _shown(root, path)))
    return problems


def _links(root: Path) -> list[ModuleProblem]:
    """Symbolic links below ``root``, which apcore's scanner passes over without a word (it follows none)."""
    found = []
    for folder, dirs, names in os.walk(root):  # never enters a linked directory either
        dirs[:] = [name for name in dirs if not name.startswith((".", "_")) and name not in _SKIPPED_DIRS]
        for name in [*dirs, *(name for name in names if name.endswith(".py") and not name.startswith((".", "_")))]:
            path = Path(folder) / name
            if path.is_symlink():
                reason = "it is a symbolic link, which apcore does not follow: nothing there is discovered"
                found.append(ModuleProblem(reason, None, _shown(root, path, resolve=False)))
    return found


def _release(record: logging.LogRecord) -> None:
    """A held-back record that is not about a skipped file, logged as apcore would have."""
    source = logging.getLogger(record.name)
    if record.msg not in _SUMMARIES and source.isEnabledFor(record.levelno):
        source.handle(record)


def _problem_of(
    record: logging.LogRecord, registry: Registry, root: Path, files: dict[str, Path]
) -> ModuleProblem | None:
    args = record.args if isinstance(record.args, tuple) else ()
    if record.msg in _SUMMARIES:
        return None
    module_id = args[0] if args and isinstance(args[0], str) else None
    path: Path | None
    if record.name == apcore_scanner.logger.name:
        # The scanner names the file it skips (a Path); a duplicate id's first file stays registered.
        path = next((arg for arg in args if isinstance(arg, Path) and _below(root, arg)), None)
        rest = args[1:] if module_id is not None else args
    elif module_id is not None and module_id in files:
        if registry.has(module_id):
            return None  # registered after all: a note about it, not a skip
        path, rest = files[module_id], args[1:]
    else:
        return None
    if path is None:
        return None
    reason = _reason(record, rest, path)
    return ModuleProblem(reason, module_id, _shown(root, path))


def _reason(record: logging.LogRecord, rest: tuple[Any, ...], path: Path) -> str:
    error = next((arg for arg in rest if isinstance(arg, BaseException)), None)
    if isinstance(error, ModuleLoadError):
        return _load_reason(error, path)
    template = _STAGES.get(str(record.msg))
    if template is None:
        return record.getMessage()
    words = [error.message if isinstance(error, ModuleError) and arg is error else str(arg) for arg in rest]
    return template.format(*words, *[""] * 2)


def _load_reason(error: ModuleLoadError, path: Path) -> str:
    reason = str(error.details.get("reason", error.message))
    cause = error.__cause__
    if reason.startswith("Failed to import module") and cause is not None:
        said = f"it cannot be imported: {_where(cause, path)}{type(cause).__name__}: {cause}"
        if isinstance(cause, KeyError) and str(cause.args[0] if cause.args else "").startswith("apcore_ext_"):
            # apcore runs the file without adding it to sys.modules; pydantic looks its module up there.
            said += (
                " (apcore imports a module file without adding it to sys.modules, and pydantic needs it there "
                "to build a generic model such as RootModel[...]: define that model in an importable package)"
            )
        return said
    if reason == "No Module subclass found in file":
        return "no module class in it: " + _MODULE_CLASS + _hints(path) + f" ({DOCS_HINT})"
    if reason.startswith("Ambiguous entry point"):
        classes = ", ".join(_module_classes(path)) or "several classes"
        return f"more than one module class in it ({classes}): {_MODULE_CLASS}; move each to a file of its own"
    return reason


def _where(cause: BaseException, path: Path) -> str:
    """``line 3: `` when the import failed inside ``path`` itself."""
    frames = [frame for frame in traceback.extract_tb(cause.__traceback__) if Path(frame.filename) == path]
    if isinstance(cause, SyntaxError) and cause.lineno is not None:
        return f"line {cause.lineno}: "
    return f"line {frames[-1].lineno}: " if frames else ""


def _syntax(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def _hints(path: Path) -> str:
    """What the file's syntax says it meant: a ``@module`` function, or a class with dict schemas."""
    tree = _syntax(path)
    if tree is None:
        return ""
    hints = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(map(_at_module, node.decorator_list)):
            hints.append(
                f"; `{node.name}` is a @module-decorated function, which apcore does not discover from a file: "
                "write it as a class"
            )
        if isinstance(node, ast.ClassDef):
            hints.extend(_class_hints(node))
    return "".join(hints)


def _at_module(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "module") or (
        isinstance(target, ast.Attribute) and target.attr == "module"
    )


def _assigned(node: ast.ClassDef) -> dict[str, ast.expr | None]:
    values: dict[str, ast.expr | None] = {}
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            values[statement.target.id] = statement.value
    return values


def _class_hints(node: ast.ClassDef) -> list[str]:
    """A class that looks meant as the module: schemas given as dicts, or missing beside an ``execute``."""
    values = _assigned(node)
    dicts = [name for name in _SCHEMAS if isinstance(values.get(name), ast.Dict)]
    if dicts:
        return [f"; class `{node.name}` declares {' and '.join(dicts)} as a dict: discovery needs pydantic models"]
    methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    missing = [name for name in _SCHEMAS if name not in values]
    if "execute" in methods and missing:
        return [f"; class `{node.name}` has an execute method but no {' and no '.join(missing)} of its own"]
    return []


def _module_classes(path: Path) -> list[str]:
    tree = _syntax(path)
    if tree is None:
        return []
    return [
        node.name for node in tree.body if isinstance(node, ast.ClassDef) and set(_SCHEMAS) <= _assigned(node).keys()
    ]


def _below(root: Path, candidate: str | Path) -> bool:
    try:
        Path(candidate).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def _shown(root: Path, path: Path, *, resolve: bool = True) -> str:
    """``path`` as below ``root`` as the operator spelled it (``extensions/demo/echo.py``)."""
    try:
        if not resolve:
            return str(root / path.relative_to(root))
        return str(root / path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
