"""The named test upstream (``tests/upstreams/named_server.py``): config entries and its child processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

NAMED = Path(__file__).resolve().parents[1] / "upstreams" / "named_server.py"


def named_entry(*names: str, **fields: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running the named upstream with one tool per name."""
    return {"command": sys.executable, "args": [str(NAMED), *names], "timeout": 20, **fields}


def named_children(parent: int | None = None) -> list[int]:
    """Our child processes running the named upstream (zombies included)."""
    parent = parent or os.getpid()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == parent and NAMED.name.encode() in cmdline:
            found.append(int(entry.name))
    return found
