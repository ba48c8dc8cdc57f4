"""Bad documents (scripts, case files, prompt files): each refusal must name the file first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from apcore_mcp.testing import DocumentError


def refusal(load: Callable[[Path], object], path: Path, text: str, error: type[Exception] = DocumentError) -> str:
    """Write ``text`` to ``path`` and load it: ``load`` must raise ``error`` whose message starts with
    ``"<path>: "``; the rest of that message (the field and what is wrong with it)."""
    path.write_text(text)
    with pytest.raises(error) as raised:
        load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: "), message
    return message.removeprefix(f"{path}: ")
