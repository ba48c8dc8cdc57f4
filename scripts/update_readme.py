"""Rewrite the README's generated tables from the settings declarations: python scripts/update_readme.py

Each table sits between ``<!-- NAME -->`` and ``<!-- /NAME -->`` markers; ``tests/test_service.py``
fails while the README differs from what this writes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from apcore_mcp.declared import parameters_table
from apcore_mcp.env import settings_table
from apcore_mcp.run.cli import cli_table

README = Path(__file__).resolve().parents[1] / "README.md"
TABLES = {"cli-table": cli_table, "env-table": settings_table, "parameters-table": parameters_table}


def render(text: str) -> str:
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)", re.DOTALL)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- {name} --> ... <!-- /{name} --> block")
        text = pattern.sub(partial(_filled, make), text)
    return text


def _filled(make: Callable[[], str], match: re.Match[str]) -> str:
    """A table's block with ``make()``'s table between its two markers."""
    return match.group(1) + make() + "\n" + match.group(2)


def main() -> int:
    text = README.read_text()
    updated = render(text)
    if updated != text:
        README.write_text(updated)
        print("README.md tables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
