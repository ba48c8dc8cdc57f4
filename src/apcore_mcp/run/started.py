"""The start log's count of served tools, taken once everything (upstream servers included) is mounted."""

from __future__ import annotations

from collections import Counter

from apcore_mcp.bridge import Bridge
from apcore_mcp.upstream.module import upstream_server_of


def tools_line(bridge: Bridge, transport: str) -> str:
    """``serving 44 tools over stdio: 5 local, 39 from upstream 'everything'`` (search mode says so).

    Counts the main endpoint's tools (the toolset it serves); a toolset endpoint has its own.
    """
    records = bridge.full_catalog.records()
    sources = Counter(upstream_server_of(bridge.registry, record.name) for record in records)
    parts = [f"{sources.pop(None, 0)} local"]
    parts += [f"{count} from upstream {server!r}" for server, count in sorted(sources.items(), key=_by_name)]
    served = f"{len(records)} tools"
    if bridge.search is not None:
        served = f"{len(bridge.catalog)} search tools over {served}"
    return f"serving {served} over {transport}: {', '.join(parts)}"


def _by_name(item: tuple[str | None, int]) -> str:
    return item[0] or ""
