"""Rewrite src/apcore_mcp/settings/keywords.py from the settings declarations: python scripts/update_settings_options.py

The module holds ``SettingsOptions``, the ``TypedDict`` that types the setting keywords of
``serve()`` and ``BackgroundServer()`` (``**options: Unpack[SettingsOptions]``). Each key and
type comes from a ``Settings`` field, so a setting is still declared once; a list setting also
takes a ``list[str]``, as ``build_settings`` turns it into the stored tuple.
``tests/project/test_public_types.py`` fails while the module differs from what this writes.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from apcore_mcp.settings import Settings

TARGET = Path(__file__).resolve().parents[1] / "src" / "apcore_mcp" / "settings" / "keywords.py"
_STORED_LIST = "tuple[str, ...]"

HEADER = '''"""``SettingsOptions``: the setting keywords of ``serve()`` and ``BackgroundServer()``, typed.

Generated from the ``Settings`` declarations by ``scripts/update_settings_options.py``; do not
edit by hand (``tests/project/test_public_types.py`` fails while this differs from what it writes).
"""

from __future__ import annotations

from typing import TypedDict


class SettingsOptions(TypedDict, total=False):
    """Every ``Settings`` field as an optional keyword; list settings also take a ``list[str]``."""

'''


def keyword_type(stored: str) -> str:
    """The type a keyword accepts for a field stored as ``stored`` (a list wherever a tuple is kept)."""
    return stored.replace(_STORED_LIST, f"{_STORED_LIST} | list[str]")


def render() -> str:
    lines = [f"    {item.name}: {keyword_type(str(item.type))}" for item in dataclasses.fields(Settings)]
    return HEADER + "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if not TARGET.exists() or TARGET.read_text() != text:
        TARGET.write_text(text)
        print(f"{TARGET.name} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
