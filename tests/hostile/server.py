"""Serve the hostile registry: ``python -m tests.hostile.server TRANSPORT [--port N] [--marker-dir D] [setting=value ...]``.

Settings are ``name=value`` pairs (numbers parsed as such).
"""

import sys
from typing import Any

from apcore_mcp import serve

from tests._support.hostile_modules import hostile_registry


def _value(text: str) -> int | float | bool | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


if __name__ == "__main__":
    transport, *rest = sys.argv[1:]
    marker_dir = None
    options: dict[str, Any] = {"log_level": "INFO"}  # each parsed from its text; serve() checks them
    for item in rest:
        name, _, value = item.partition("=")
        if name == "marker_dir":
            marker_dir = value
        else:
            options[name] = _value(value)
    serve(hostile_registry(marker_dir), transport=transport, **options)
