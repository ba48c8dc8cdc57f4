"""The ``Settings`` declarations read as a list of ``Option``s, for the CLI, the environment and the docs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from apcore_mcp.settings import Settings
from apcore_mcp.settings.option import Option, old_spellings_note

__all__ = ["default_of", "options", "parameters_table"]


def options() -> Iterator[Option]:
    """Every setting's ``Option``, in declaration order."""
    for item in dataclasses.fields(Settings):
        spec = item.metadata.get("spec")
        if spec is None:
            continue
        dashed = item.name.replace("_", "-")
        flag = spec["flag"]
        if flag == "":
            flag = f"--no-{dashed}" if spec["kind"] == "bool" and item.default is True else f"--{dashed}"
        env = spec["env"]
        if env == "":
            env = item.name.upper()
        yield Option(
            name=item.name,
            help=spec["help"],
            group=spec["group"],
            kind=spec["kind"],
            flag=flag,
            env=env,
            choices=spec["choices"],
            metavar=spec["metavar"],
            secret=spec["secret"],
            default_text=spec["default_text"],
            old_names=spec["old_names"],
        )


def default_of(name: str) -> Any:
    for item in dataclasses.fields(Settings):
        if item.name == name:
            return item.default
    raise KeyError(name)


def parameters_table() -> str:
    """The README's table of ``serve()`` / ``BackgroundServer`` / ``Settings`` keyword arguments."""
    rows = []
    for opt in options():
        default = default_of(opt.name)
        shown = opt.default_text or ("`None`" if default is None else f"`{default!r}`")
        rows.append(f"| `{opt.name}` | {shown} | {opt.help}{old_spellings_note(opt.old_names)} |")
    return "\n".join(["| parameter | default | meaning |", "| --- | --- | --- |", *rows])
