"""The MCP SDK's private API is read in one module only: ``src/apcore_mcp/_sdk.py``.

As ``tests/pipeline/test_private_api.py`` does for apcore: with every such read in one place, an SDK release
that moves one breaks there, loudly. Every module under ``src/apcore_mcp`` is parsed with ``ast``;
outside ``_sdk.py`` these fail:

- importing a private module of ``mcp`` or ``mcp_types`` (``from mcp.server import _otel``,
  ``from mcp.server._otel import ...``), or a private name from either;
- ``getattr``/``hasattr``/``setattr`` with a literal ``_name`` (not a dunder);
- ``super()._name``: a private hook of an SDK base class.

``http/sessions.py`` subclasses the SDK's session manager and overrides three of its hooks (and
hands each session its event store): listed in ``KNOWN``, each with what it needs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from mcp.server import _streamable_http_modern

from apcore_mcp import _sdk as sdk_internals

SOURCE = Path(__file__).resolve().parents[2] / "src" / "apcore_mcp"
ALLOWED = {SOURCE / "_sdk.py", SOURCE / "_apcore.py"}
"""The SDK's quarantine, and apcore's (its ``getattr`` reads are apcore's: ``tests/pipeline/test_private_api.py``)."""
SDK_PACKAGES = ("mcp", "mcp_types")

KNOWN: dict[str, set[str]] = {
    # Per-caller session caps run under the SDK's session-creation lock; a session's own view of
    # the resume store is handed to its transport (the SDK takes one store for all sessions).
    "http/sessions.py": {"_handle_stateful_request", "_admit_session", "_discard_session"},
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _sdk(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in SDK_PACKAGES


def uses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each use of the SDK's private API in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _sdk(node.module):
            module = node.module or ""
            if any(_private(part) for part in module.split(".")):
                yield node.lineno, f"from {module} import"
            yield from ((node.lineno, f"{module}.{a.name}") for a in node.names if _private(a.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _sdk(alias.name) and any(_private(part) for part in alias.name.split(".")):
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
                    yield node.lineno, f"{node.func.id}(..., {name.value!r})"
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            inner = node.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "super":
                yield node.lineno, f"super().{node.attr}"


def test_sdk_private_api_is_read_only_in_sdk_internals() -> None:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path in ALLOWED:
            continue
        relative = path.relative_to(SOURCE).as_posix()
        known = KNOWN.get(relative, set())
        for line, what in uses(ast.parse(path.read_text(), str(path))):
            if what.removeprefix("super().") not in known:
                found.append(f"{relative}:{line}: {what}")
    assert not found, "the SDK's private API outside _sdk.py:\n" + "\n".join(found)


def test_the_check_sees_each_kind_of_use() -> None:
    """The walker itself: each form is reported (a check that finds nothing proves nothing)."""
    source = (
        "from mcp.server import _streamable_http_modern\n"
        "from mcp.server._otel import OpenTelemetryMiddleware\n"
        "from mcp.server.runner import _dump_result\n"
        "import mcp.server._otel\n"
        "getattr(ctx.session, '_connection', None)\n"
        "class M(Base):\n    def f(self):\n        return super()._admit_session(None)\n"
        "getattr(x, '__name__')\nfrom mcp.server.runner import serve_one\n"
    )
    assert [line for line, _ in uses(ast.parse(source))] == [1, 2, 3, 4, 5, 8]


def test_the_mirrored_sdk_values_are_the_ones_its_modern_entry_uses() -> None:
    """What the direct path copies from the SDK, checked against the SDK module itself."""
    assert sdk_internals.SSE_PING_INTERVAL == _streamable_http_modern._SSE_PING_INTERVAL > 0
    assert list(_streamable_http_modern._SSE_HEADERS) == sdk_internals.SSE_HEADERS
    assert (b"content-type", b"text/event-stream") in sdk_internals.SSE_HEADERS
