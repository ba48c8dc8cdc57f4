"""The client code under test: asks an MCP server for a forecast, retrying a failed call once."""

from __future__ import annotations

from typing import Any

import mcp.types as types


async def forecast_sentence(client: Any, city: str, *, meta: dict[str, Any] | None = None) -> str:
    """``"<city>: <forecast>"``, or ``"<city>: unavailable"`` after two failed calls."""
    for _attempt in range(2):
        result = await client.call_tool("forecast", {"city": city}, meta=meta)
        if not result.is_error:
            text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
            return f"{city}: {text}"
    return f"{city}: unavailable"
