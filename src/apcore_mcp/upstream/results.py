"""How an upstream ``CallToolResult`` travels through apcore's Executor and comes out unchanged.

apcore wants a dict from ``execute``. An upstream tool returns ``{MCP_RESULT_KEY: wire}``
where ``wire`` is the result in MCP wire form (camelCase, JSON types only: ``content`` with
every item as sent, ``structuredContent``, ``isError``, and ``_meta`` without the hop's own
``io.modelcontextprotocol/*`` stamps). Middleware sees a plain JSON dict; the MCP edge
rebuilds the ``CallToolResult`` from ``wire`` with ``mcp_result_of`` instead of wrapping the
dict as text. The wire form (not the pydantic object) makes the output JSON-serialisable for
anything else that looks at it (logs, the explorer, a cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as types

MCP_RESULT_KEY = "_mcp_result"
_HOP_META_PREFIX = "io.modelcontextprotocol/"


def to_output(result: types.CallToolResult) -> dict[str, Any]:
    """The apcore output carrying ``result``."""
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire.pop("resultType", None)  # the edge that answers sets it for its own protocol version
    meta = wire.get("_meta")
    if isinstance(meta, dict):
        kept = {key: value for key, value in meta.items() if not key.startswith(_HOP_META_PREFIX)}
        if kept:
            wire["_meta"] = kept
        else:
            del wire["_meta"]
    return {MCP_RESULT_KEY: wire}


def mcp_result_of(output: Any) -> types.CallToolResult | None:
    """The ``CallToolResult`` an output carries, or ``None`` for an ordinary output."""
    if not isinstance(output, Mapping):
        return None
    wire = output.get(MCP_RESULT_KEY)
    if not isinstance(wire, Mapping):
        return None
    return types.CallToolResult.model_validate(dict(wire))
