"""A third-party stdio MCP server whose tools have the names given on its command line.

``python tests/upstreams/named_server.py NAME [NAME...]`` lists one tool per ``NAME`` (as npm
servers name theirs: ``get-sum``, ``getTinyImage``); each answers with the name it was called
under, so a test sees which upstream tool a call reached.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def build(names: list[str]) -> Server[Any]:
    tools = [
        types.Tool(name=name, description=f"Tool {name}", input_schema={"type": "object", "properties": {}})
        for name in names
    ]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
        return types.CallToolResult(
            content=[types.TextContent(text=params.name)], structured_content={"called": params.name}
        )

    return Server("named-upstream", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    asyncio.run(serve(build(args.names)))


if __name__ == "__main__":
    main()
