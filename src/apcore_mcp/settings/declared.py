"""The ``Settings`` declarations read as a list of ``Option``s, for the CLI, the environment and the docs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from apcore_mcp.settings import Settings
from apcore_mcp.settings.option import Option

__all__ = ["default_of", "options"]


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
