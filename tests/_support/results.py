"""Reading a tool result's content in tests, narrowed to the type the test expects."""

from __future__ import annotations

from mcp import types


def text_of(result: types.CallToolResult) -> str:
    """The text of the result's first content block, which must be a text block."""
    assert result.content, "the result has no content"
    return block_text(result.content[0])


def block_text(block: object) -> str:
    """The text of a content block (of a tool result, a prompt message, a sampling message), which must be text."""
    assert isinstance(block, types.TextContent), f"not a text block: {block!r}"
    return block.text
