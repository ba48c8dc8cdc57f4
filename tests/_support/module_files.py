"""Extension-directory files as a module author writes them, for the discovery tests.

``module_file`` renders one file in the shape apcore 0.32 discovers (pydantic ``In``/``Out``
models and one class with ``description``, the schemas and ``execute``); each argument left out
or changed makes the file broken in exactly one way. ``write_files`` lays files out below a root.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

MODELS = """\
from pydantic import BaseModel

class In(BaseModel):
    text: str

class Out(BaseModel):
    echo: str
"""


def module_file(
    name: str = "Echo",
    *,
    description: str | None = "Echo the text back",
    input_schema: str | None = "In",
    init: str | None = None,
    after: str = "",
) -> str:
    """The source of a module file whose class is ``name`` (``None`` leaves a field out)."""
    lines = [f"class {name}:"]
    if description is not None:
        lines.append(f"    description = {description!r}")
    if input_schema is not None:
        lines.append(f"    input_schema = {input_schema}")
    lines.append("    output_schema = Out")
    if init is not None:
        lines += ["", f"    def __init__(self, {init}):", f"        self.{init} = {init}"]
    lines += ["", "    def execute(self, inputs, context):", '        return {"echo": inputs["text"]}']
    return MODELS + "\n" + "\n".join(lines) + "\n" + after


GOOD = module_file()

DECORATED = """\
from apcore import module

@module(description="Add two numbers")
def add(a: int, b: int) -> int:
    return a + b
"""

RECURSIVE = """\
from __future__ import annotations
from pydantic import BaseModel

class Node(BaseModel):
    name: str
    children: list[Node] = []

class Out(BaseModel):
    count: int

class CountNodes:
    description = "A recursive schema"
    input_schema = Node
    output_schema = Out

    def execute(self, inputs, context):
        return {"count": 1}
"""


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Each ``relative path -> source`` below ``root`` (dedented); ``root``."""
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip())
    return root
