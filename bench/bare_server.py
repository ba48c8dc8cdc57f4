"""The limit: a bare mcp 2.x low-level server over the same extensions dir, nothing of ours in it.

``--mode executor``: the tool handler calls apcore's ``Executor.call_async`` directly.
``--mode direct``: the handler answers without the Executor (echoes the arguments).

    python -m bench.bare_server --extensions-dir D --mode executor --transport streamable-http --port P
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
import uvicorn
from apcore import Executor, Registry
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send


def build_bare_server(registry: Any, *, use_executor: bool) -> Server[Any]:
    """A low-level server listing every module (schemas taken once) and calling through the Executor."""
    executor = Executor(registry)
    tools = []
    for module_id in registry.list():
        descriptor = registry.get_definition(module_id)
        tools.append(
            types.Tool(
                name=module_id,
                description=descriptor.description or "",
                input_schema=descriptor.input_schema,
                output_schema=descriptor.output_schema or None,
            )
        )

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    # The SDK's documented hook (its MCPServer sets it too): without it, every 2026-07-28 tools/call
    # with arguments runs a whole tools/list to find the schema Mcp-Param-* headers are checked against.
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if use_executor:
            output = await executor.call_async(params.name, arguments)
        else:
            output = dict(arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(output))], structured_content=output, is_error=False
        )

    return Server(
        "bare", version="0", on_list_tools=list_tools, on_call_tool=call_tool, get_tool_input_schema=schemas.get
    )


def build_app(server: Server[Any]) -> Starlette:
    manager = StreamableHTTPSessionManager(app=server)
    sse = SseServerTransport("/messages/")

    async def sse_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        async with sse.connect_sse(scope, receive, send) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    class SseApp:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await sse_endpoint(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[
            Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
            Route("/sse", endpoint=SseApp()),
            Mount("/messages/", app=sse.handle_post_message),
        ],
        lifespan=lifespan,
    )


async def run_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--extensions-dir", required=True)
    parser.add_argument("--mode", choices=["executor", "direct"], default="executor")
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level)
    registry = Registry(extensions_dir=args.extensions_dir)
    registry.discover()
    server = build_bare_server(registry, use_executor=args.mode == "executor")
    if args.transport == "stdio":
        anyio.run(run_stdio, server)
        return
    # h11 + asyncio named, not uvicorn's "auto": with uvloop and httptools installed (the speed
    # extra) "auto" would switch stacks and move every baseline measured against this server.
    uvicorn.run(
        build_app(server),
        host=args.host,
        port=args.port,
        http="h11",
        loop="asyncio",
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
