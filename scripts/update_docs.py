"""Rewrite the documentation's generated tables from the code's declarations: python scripts/update_docs.py

Each table sits between ``<!-- NAME -->`` and ``<!-- /NAME -->`` markers in one page of ``docs/``:

- ``settings-table`` (docs/settings.md): every setting, once, as its ``serve()`` keyword, its
  command-line flag and its ``APCORE_MCP_*`` variable, from the ``Settings`` declarations;
- ``launch-table`` (docs/cli.md): the command line's options that are not settings;
- ``metrics-table`` (docs/metrics.md): the Prometheus metrics ``/metrics`` serves, read from
  their declarations in ``src/apcore_mcp/http/metrics.py`` and checked against a live ``Metrics``;
- ``public-api-table`` (docs/python-api.md): every name ``apcore_mcp`` exports, with its call
  signature and the first line of its docstring;
- ``error-codes-table`` (docs/errors.md): the JSON-RPC error codes of this project, read from
  their declarations (a module-level ``NAME = -32xxx`` with its docstring) anywhere in the package.

``tests/project/test_docs.py`` fails while a page differs from what this writes; ``--check`` only reports.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from apcore_mcp.calls.errors import ErrorKind
from apcore_mcp.http.metrics import REASONS_BY_STATUS
from apcore_mcp.settings import Option
from apcore_mcp.settings.declared import default_of, options
from apcore_mcp.settings.env import LAUNCH_OPTIONS
from apcore_mcp.settings.option import old_spellings_note

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PACKAGE = REPO / "src" / "apcore_mcp"
METRICS_SOURCE = PACKAGE / "http" / "metrics.py"

GROUP_TITLES = {
    "identity": "Identity",
    "filters": "Which modules are served",
    "network": "Network",
    "protocol": "Protocol, sessions and streams",
    "service": "Service routes and shutdown",
    "limits": "Limits",
    "logging": "Logging",
    "replicas": "Replicas (Redis)",
    "auth": "Authentication and caller identity",
    "upstreams": "Upstream MCP servers",
}


# -- settings ------------------------------------------------------------------------------------


def _default(opt: Option) -> str:
    if opt.default_text is not None:
        return opt.default_text
    value = default_of(opt.name)
    if value is None or value == ():
        return "none"
    if isinstance(value, tuple):
        return f"`{','.join(str(item) for item in value)}`"
    return f"`{value}`"


def _spellings(opt: Option) -> str:
    """The keyword, the flag (with its value's placeholder) and the variable of one setting."""
    names = [f"`{opt.name}`"]
    if opt.flag is not None:
        metavar = f" {opt.metavar}" if opt.metavar and opt.kind != "bool" else ""
        names.append(f"`{opt.flag}{metavar}`")
    if opt.env_var is not None:
        names.append(f"`{opt.env_var}`")
    return "<br>".join(names)


def _old_names(opt: Option) -> str:
    return old_spellings_note([*opt.old_names, *opt.old_flags, *opt.old_env_vars])


def settings_table() -> str:
    """Every setting once, grouped by concept: keyword / flag / variable, default, meaning."""
    groups: dict[str, list[Option]] = {}
    for opt in options():
        groups.setdefault(opt.group, []).append(opt)
    parts = []
    for group, members in groups.items():
        rows = [f"| {_spellings(opt)} | {_default(opt)} | {opt.help}{_old_names(opt)} |" for opt in members]
        title = GROUP_TITLES.get(group, group.capitalize())
        parts.append(
            "\n".join([f"### {title}", "", "| keyword / flag / variable | default | meaning |", "| --- | --- | --- |"])
            + "\n"
            + "\n".join(rows)
        )
    return "\n\n".join(parts)


def launch_table() -> str:
    """The command line's own options: not settings, so not ``serve()`` keywords."""
    rows = ["| `--version` | | | print the version and exit |"]
    for opt in LAUNCH_OPTIONS:
        metavar = f" {opt.metavar}" if opt.metavar else ""
        variable = f"`{opt.env_var}`" if opt.env_var else ""
        rows.append(f"| `{opt.flag}{metavar}` | {variable} | {opt.default_text or 'none'} | {opt.help} |")
    return "\n".join(["| flag | variable | default | meaning |", "| --- | --- | --- | --- |", *rows])


# -- metrics -------------------------------------------------------------------------------------

_SAMPLES = {"Counter": "{name}_total", "Gauge": "{name}", "Histogram": "{name}_bucket, _sum, _count"}


def declared_metrics() -> Iterator[tuple[str, str, str, list[str]]]:
    """``(kind, name, help, labels)`` of every ``Counter``/``Gauge``/``Histogram(...)`` call in the metrics module."""
    tree = ast.parse(METRICS_SOURCE.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SAMPLES:
            name, text = (ast.literal_eval(arg) for arg in node.args[:2])
            labels = ast.literal_eval(node.args[2]) if len(node.args) > 2 else []
            yield node.func.id, name, text, list(labels)


def live_metric_names() -> set[str]:
    """The metric families a real ``Metrics`` registers (so a metric declared elsewhere cannot be missed)."""
    from apcore_mcp.http.metrics import Metrics

    stub: Any = type("Stub", (), {"in_flight": 0, "__len__": lambda self: 0})()
    return {family.name for family in Metrics(stub, stub).registry.collect()}


def metrics_table() -> str:
    declared = list(declared_metrics())
    names = {name for _, name, _, _ in declared}
    live = live_metric_names()
    if names != live:
        raise SystemExit(f"{METRICS_SOURCE}: declared metrics {sorted(names)} differ from the live ones {sorted(live)}")
    rows = []
    for kind, name, text, labels in declared:
        sample = _SAMPLES[kind].format(name=name)
        shown = ", ".join(f"`{label}`" for label in labels) or ""
        rows.append(f"| `{sample}` | {kind.lower()} | {shown} | {text} |")
    outcomes = ", ".join(f"`{value}`" for value in ["ok", "input_required", *typing.get_args(ErrorKind)])
    reasons = ", ".join(f"`{reason}` ({status})" for status, reason in sorted(REASONS_BY_STATUS.items()))
    return "\n".join(
        [
            "| metric | type | labels | meaning |",
            "| --- | --- | --- | --- |",
            *rows,
            "",
            f"The `outcome` of a tool call is one of {outcomes}. "
            f"A refusal answered by its HTTP status alone has the `reason` {reasons}.",
        ]
    )


# -- error codes ---------------------------------------------------------------------------------


def declared_error_codes() -> Iterator[tuple[int, str, str]]:
    """``(code, module.NAME, docstring)`` of every module-level ``NAME = -32xxx`` followed by its docstring."""
    for path in sorted(PACKAGE.rglob("*.py")):
        body = ast.parse(path.read_text()).body
        for node, after in zip(body, [*body[1:], None], strict=True):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if not (isinstance(value, int) and -32099 <= value <= -32000):
                continue
            doc = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else None
            if not isinstance(doc, str):
                raise SystemExit(f"{path}: {node.targets[0].id} = {value} has no docstring saying what it means")
            module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            yield value, f"{module}.{node.targets[0].id}", " ".join(doc.split())


def error_codes_table() -> str:
    rows = [
        f"| `{code}` | `{name}` | {doc.replace('``', '`')} |"
        for code, name, doc in sorted(declared_error_codes(), reverse=True)
    ]
    return "\n".join(["| code | declared as | meaning |", "| --- | --- | --- |", *rows])


# -- the public API ------------------------------------------------------------------------------


def _signature(obj: Callable[..., Any]) -> str:
    """``(a, *, b='x', **options)``: names and defaults, no annotations."""
    signature = inspect.signature(obj)
    params = [param.replace(annotation=inspect.Parameter.empty) for param in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def public_api_table() -> str:
    """One row per name of ``apcore_mcp.__all__``: how it is called (when short) and its docstring's first line."""
    import apcore_mcp

    rows = []
    for name in sorted(apcore_mcp.__all__, key=str.lower):
        obj = getattr(apcore_mcp, name)
        if name.startswith("__"):
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            typed_dict = inspect.isclass(obj) and hasattr(obj, "__total__")
            error = inspect.isclass(obj) and issubclass(obj, BaseException)  # raised, not called
            call = name if typed_dict or error else f"{name}{_signature(obj)}"
            shown = f"`{name}`" if len(call) > 160 else f"`{call}`"
            doc = inspect.getdoc(obj) or ""
        elif isinstance(obj, types.UnionType):
            members = " or ".join(f"`{arg.__name__}`" for arg in typing.get_args(obj))
            shown, doc = f"`{name}`", f"A type alias: {members}"
        else:
            shown, doc = f"`{name}` = `{obj!r}`", ""
        first = " ".join(doc.split("\n\n", 1)[0].split()).replace("``", "`")
        rows.append(f"| {shown} | {first} |")
    return "\n".join(["| name | what it is |", "| --- | --- |", *rows])


# -- the pages -----------------------------------------------------------------------------------

TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "settings-table": ("settings.md", settings_table),
    "launch-table": ("cli.md", launch_table),
    "metrics-table": ("metrics.md", metrics_table),
    "public-api-table": ("python-api.md", public_api_table),
    "error-codes-table": ("errors.md", error_codes_table),
}


def render(page: str, text: str) -> str:
    """``text`` of ``docs/<page>`` with each of its generated tables written afresh."""
    for name, (where, make) in TABLES.items():
        if where != page:
            continue
        pattern = re.compile(rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)", re.DOTALL)
        if not pattern.search(text):
            raise SystemExit(f"docs/{page} has no <!-- {name} --> ... <!-- /{name} --> block")
        text = pattern.sub(partial(_filled, make), text)
    return text


def _filled(make: Callable[[], str], match: re.Match[str]) -> str:
    """A table's block with ``make()``'s table between its two markers."""
    return match.group(1) + make() + "\n" + match.group(2)


def stale_pages() -> list[str]:
    """The pages whose generated tables differ from what this script writes."""
    pages = sorted({page for page, _ in TABLES.values()})
    return [page for page in pages if render(page, (DOCS / page).read_text()) != (DOCS / page).read_text()]


def main(argv: list[str]) -> int:
    stale = stale_pages()
    if "--check" in argv:
        for page in stale:
            print(f"docs/{page}: generated tables are stale (python scripts/update_docs.py)")
        return 1 if stale else 0
    for page in stale:
        path = DOCS / page
        path.write_text(render(page, path.read_text()))
        print(f"docs/{page} tables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
