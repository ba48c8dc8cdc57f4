"""The version line this package should print, built from installed metadata (not from the code under test)."""

from __future__ import annotations

import importlib.util
import platform
from importlib import metadata
from pathlib import Path

from apcore_mcp._version import __version__


def expected_line() -> str:
    """``apcore-mcp <v> (apcore <v>, mcp <v>, Python <v>)`` for the distributions installed here."""
    return (
        f"apcore-mcp {__version__} (apcore {metadata.version('apcore')}, mcp {metadata.version('mcp')}, "
        f"Python {platform.python_version()})"
    )


def package_dir() -> Path:
    """The directory ``apcore_mcp`` is imported from in this interpreter."""
    spec = importlib.util.find_spec("apcore_mcp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).resolve().parent
