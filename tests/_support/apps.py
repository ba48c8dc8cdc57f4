"""Modules with MCP Apps views, written as files and found by apcore's discovery (as a user's would be)."""

from __future__ import annotations

from pathlib import Path

from apcore import Registry

VIEW_PAGE = "<!doctype html><title>shown</title><p id='shown'>a view</p>"

MODULE = """
from typing import Any

from pydantic import BaseModel

from apcore_mcp.views import View


class LengthIn(BaseModel):
    text: str = ""


class LengthOut(BaseModel):
    length: int


class Length:
    description = "The length of a text"
    input_schema = LengthIn
    output_schema = LengthOut
    tags = {tags!r}
    view = {view}

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        return {{"length": len(inputs.get("text", ""))}}
"""


def write_module(root: Path, module_id: str, view: str | None, *, tags: tuple[str, ...] = ()) -> Path:
    """``root/<a>/<b>.py`` for ``module_id`` ``a.b``, its ``view`` attribute the Python expression ``view``."""
    package, name = module_id.split(".")
    folder = root / package
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(MODULE.format(view=view or "None", tags=list(tags)))
    return folder


def discovered(root: Path, expected: int) -> Registry:
    registry = Registry(extensions_dir=str(root))
    assert registry.discover() == expected
    return registry
