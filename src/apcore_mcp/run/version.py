"""Which apcore-mcp this is, in one line: ``apcore-mcp --version`` and the first line of a server's log.

The package index holds an unrelated project under the same name (0.23.x, built on mcp 1.x), so
the line names this package's version with the apcore and mcp releases it runs on, which tell the
two apart even where the version number alone would not be recognised.
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

from apcore_mcp._version import __version__


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # run from a source tree without installing it
        return "not installed"


def version_line() -> str:
    """``apcore-mcp 0.1.0 (apcore 0.32.2, mcp 2.3.0, Python 3.11.7)``: versions as installed."""
    return (
        f"apcore-mcp {__version__} "
        f"(apcore {_installed('apcore')}, mcp {_installed('mcp')}, Python {platform.python_version()})"
    )


def version_text() -> str:
    """What ``--version`` prints: the version line and the directory the package was imported from
    (a checkout's ``src/`` for an editable install, else ``site-packages``)."""
    return f"{version_line()} from {Path(__file__).resolve().parent.parent}"
