"""Why a registered module cannot be served, said once, naming its module id and its file.

A module object apcore accepted can still be unusable: ``Registry.register()`` checks ids, not
shapes, so a function, a class without ``input_schema`` or without ``execute`` is accepted and
would be listed with an empty schema, every call answering "Internal error occurred". Its
definition may also fail to build (``get_definition`` runs the schema classes) or not render
as MCP JSON Schema. ``describe_module`` turns a module into its ``ToolRecord`` or into a
``ModuleProblem``; the catalog serves the first and logs the second (``ModuleProblemsError``
makes them a start failure, ``settings.strict_modules``).
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apcore
from apcore import Registry

from apcore_mcp.tools.records import MAX_TOOL_NAME_LENGTH, ToolRecord, build_record

DOCS_HINT = "see the Writing modules page of the docs"
_OWN_CODE = (str(Path(apcore.__file__ or "").parent) + os.sep, str(Path(__file__).resolve().parents[1]) + os.sep)
"""Files that are ours or apcore's: never named as "the module's file" (upstream and meta-tools live there)."""


@dataclass(frozen=True)
class ModuleProblem:
    """One module (or module file) that is not served, and why."""

    reason: str
    module_id: str | None = None
    file: str | None = None

    def subject(self) -> str:
        """``extensions/x.py (module 'x')``, or whichever of the two is known."""
        if self.file and self.module_id:
            return f"{self.file} (module '{self.module_id}')"
        if self.file:
            return self.file
        return f"module '{self.module_id}'"

    def __str__(self) -> str:
        return f"{self.subject()}: {self.reason}"


class ModuleProblemsError(ValueError):
    """Modules are not served and ``strict_modules`` is on: the message lists every problem."""

    def __init__(self, problems: Sequence[ModuleProblem]) -> None:
        self.problems = tuple(problems)
        listed = "; ".join(str(problem) for problem in self.problems)
        super().__init__(
            f"{len(self.problems)} module problem(s), and strict_modules (--strict-modules) is on, "
            f"so the server does not start: {listed}. "
            "Fix each, or turn strict_modules off to serve the other modules with a WARNING for each."
        )


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter log lines), else as is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def source_file(module: object) -> str | None:
    """The file of the user's code behind ``module``: the function itself, else its class's ``execute``
    or, failing that, the class (a class apcore loaded from a file is not in ``sys.modules``)."""
    owner = module if inspect.isclass(module) else type(module)
    target = module if inspect.isfunction(module) else getattr(owner, "execute", None)
    code = getattr(inspect.unwrap(target), "__code__", None) if callable(target) else None
    filename = getattr(code, "co_filename", None)
    if filename is None:
        with contextlib.suppress(TypeError, OSError):
            filename = inspect.getsourcefile(owner)
    if not isinstance(filename, str) or filename.startswith(_OWN_CODE) or filename.startswith("<"):
        return None
    return shown_path(filename)


def shape_problem(module: object) -> str | None:
    """What makes ``module`` unusable before its definition is even built, or None."""
    if inspect.isfunction(module) or inspect.ismethod(module):
        if getattr(module, "apcore_module", None) is not None:
            return (
                "a @module-decorated function was registered instead of its module: "
                "register `func.apcore_module` (or pass registry= to @module)"
            )
        return "a plain function was registered: register a module object (a class instance with execute)"
    if inspect.isclass(module):
        return f"the class {module.__name__} was registered instead of an instance of it: register {module.__name__}()"
    if not callable(getattr(module, "execute", None)):
        return f"it has no execute method ({DOCS_HINT})"
    schema = getattr(module, "input_schema", None)
    if schema is None:
        return f"it has no input_schema: without one its arguments would be listed as empty ({DOCS_HINT})"
    if not callable(getattr(schema, "model_json_schema", None)):
        return "its input_schema is neither a pydantic model class nor a JSON Schema dict"
    return None


def describe_module(registry: Registry, module_id: str) -> ToolRecord | ModuleProblem | None:
    """The record of ``module_id``, the problem that keeps it from being served, or None if it is gone."""
    module = registry.get(module_id)
    if module is None:
        return None  # unregistered meanwhile
    file = source_file(module)
    if len(module_id) > MAX_TOOL_NAME_LENGTH:
        # apcore allows ids up to 192 characters; an MCP tool name has at most 128. A silently
        # truncated name could collide; a hashed one could not be typed by anyone: not served.
        reason = f"its id has {len(module_id)} characters, more than the {MAX_TOOL_NAME_LENGTH} of an MCP tool name"
        return ModuleProblem(reason, module_id, file)
    if (shape := shape_problem(module)) is not None:
        return ModuleProblem(shape, module_id, file)
    try:
        descriptor = registry.get_definition(module_id)
    except Exception as exc:  # noqa: BLE001 - module code (its schema classes) runs here; one bad module is skipped
        return ModuleProblem(f"its definition cannot be built: {_one_line(exc)}", module_id, file)
    if descriptor is None:
        return None
    try:
        record = build_record(descriptor)
    except (ValueError, KeyError) as exc:
        return ModuleProblem(f"its schema cannot be rendered as MCP JSON Schema: {_one_line(exc)}", module_id, file)
    kind = record.input_schema.get("type")
    if kind != "object":
        reason = f"its input schema is of type {kind!r}, not 'object': MCP tool arguments are a JSON object"
        return ModuleProblem(reason, module_id, file)
    return record


def registry_problems(registry: Registry) -> list[ModuleProblem]:
    """The problem of every registered module that cannot be served (every module is described)."""
    found = (describe_module(registry, module_id) for module_id in registry.list())
    return [item for item in found if isinstance(item, ModuleProblem)]


def _one_line(exc: BaseException) -> str:
    """An exception as one line (pydantic's messages end with a link paragraph)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first}"
