"""uvicorn's HTTP protocols with a deadline and a size limit on request headers: h11 (``timed``)
and httptools (``httptools``, an extra). The names uvicorn's ``--http`` takes live here:
``apcore_mcp.run.protocol:TimedH11Protocol`` and ``apcore_mcp.run.protocol:TimedHttpToolsProtocol``
(imported on first use, so the h11 one works without httptools installed)."""

from __future__ import annotations

from typing import Any

from apcore_mcp.run.protocol.timed import TimedH11Protocol

__all__ = ["TimedH11Protocol", "TimedHttpToolsProtocol"]


def __getattr__(name: str) -> Any:
    if name == "TimedHttpToolsProtocol":
        from apcore_mcp.run.protocol.httptools import TimedHttpToolsProtocol

        return TimedHttpToolsProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
