"""How an upstream ``CallToolResult`` travels through apcore's Executor and comes out unchanged.

apcore wants a dict from ``execute``. An upstream tool returns ``{MCP_RESULT_KEY: wire}``
where ``wire`` is the result in MCP wire form: camelCase JSON with ``content`` (every item as
sent), ``structuredContent``, ``isError`` and ``_meta`` (without the hop's own
``io.modelcontextprotocol/*`` stamps, and without ``resultType``, which the answering edge
sets for its own protocol version). Every edge takes ``wire`` as the result
(``calls.carried_result``) instead of wrapping the output as text; ``mcp_result_of`` gives
it as a ``CallToolResult``, for code calling the Executor itself.

``wire`` is the JSON *text* of that object (``to_output``), or the object itself as a dict
(also accepted by ``mcp_result_of``, for modules that build one by hand). Text is what
upstream tools produce: one opaque string is serialised and parsed by pydantic's core in
one step each way, and apcore's per-call redaction walks one key instead of every key of
every content item, which is most of what a pass-through costs.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types

from apcore_mcp.calls.router import carried_result
from apcore_mcp.tools.content import MCP_RESULT_KEY

__all__ = ["MCP_RESULT_KEY", "mcp_result_of", "to_output"]
_HOP_META_PREFIX = "io.modelcontextprotocol/"


def to_output(result: types.CallToolResult) -> dict[str, Any]:
    """The apcore output carrying ``result`` (see the module doc)."""
    meta = result.meta
    if meta and any(key.startswith(_HOP_META_PREFIX) for key in meta):
        kept = {key: value for key, value in meta.items() if not key.startswith(_HOP_META_PREFIX)}
        result = result.model_copy(update={"meta": kept or None})
    return {MCP_RESULT_KEY: result.model_dump_json(by_alias=True, exclude_none=True, exclude={"result_type"})}


def mcp_result_of(output: object) -> types.CallToolResult | None:
    """The ``CallToolResult`` an output carries, or ``None`` for an ordinary output.

    Raises:
        ValueError: (pydantic's ``ValidationError``) the carried value is not a tool result.
    """
    wire = carried_result(output)
    return None if wire is None else types.CallToolResult.model_validate(wire)
