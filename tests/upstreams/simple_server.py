"""A third-party MCP server for the upstream tests, on the SDK's low-level ``Server`` only.

``python tests/upstreams/simple_server.py [--transport stdio|http|sse] [--port N] [--tools N]
[--hang-start]`` serves over stdio (default), Streamable HTTP (``/mcp``) or legacy SSE
(``/sse`` + ``/messages/``) on 127.0.0.1. It knows nothing of apcore-mcp: it plays the part
of the filesystem/GitHub/database servers a team would mount.

Tools: ``echo`` (structured), ``pid``, ``contents`` (every content type), ``fail`` (``isError``),
``progress``, ``ask`` (elicitation: a request on the call's stream in the handshake era, an
input-required round in the 2026-07-28 era), ``sample`` (sampling), ``grow`` (adds a tool and
announces ``list_changed``), ``crash`` (exits at once), ``hang`` (sleeps), ``env`` (reads an
environment variable's digest), ``headers`` (the HTTP headers this call arrived with), ``wipe``
(annotated destructive), and ``--tools N`` generated ``gen_NNN`` tools.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import os
import secrets
import sys
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
ASK_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
ECHO_OUT: dict[str, Any] = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None, **extra: Any) -> types.Tool:
    schema = {"type": "object", "properties": properties or {}}
    if properties:
        schema["required"] = [key for key, value in properties.items() if "default" not in value]
    return types.Tool(name=name, description=description, input_schema=schema, **extra)


def base_tools(generated: int) -> list[types.Tool]:
    readonly = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    tools = [
        _tool(
            "echo",
            "Echo the text back",
            {"text": {"type": "string", "description": "What to echo"}},
            output_schema=ECHO_OUT,
            annotations=readonly,
        ),
        _tool("pid", "The process id of this server", annotations=readonly),
        _tool("contents", "Answer with one of every content type"),
        _tool("fail", "Answer with a tool error", {"why": {"type": "string", "default": "because"}}),
        _tool("progress", "Report progress, then answer", {"steps": {"type": "integer", "minimum": 1}}),
        _tool("ask", "Ask the user a question", {"question": {"type": "string"}}),
        _tool("sample", "Ask the client's model", {"prompt": {"type": "string"}}),
        _tool("grow", "Add a tool named after the argument", {"name": {"type": "string"}}),
        _tool("crash", "Exit the server process at once"),
        _tool("hang", "Sleep for a while", {"seconds": {"type": "number", "default": 3600}}),
        _tool("env", "The SHA-256 of an environment variable's value (never the value)", {"name": {"type": "string"}}),
        _tool("headers", "The HTTP headers of this call"),
        _tool(
            "wipe",
            "Delete everything",
            annotations=types.ToolAnnotations(destructive_hint=True, read_only_hint=False, open_world_hint=True),
        ),
    ]
    for i in range(generated):
        tools.append(_tool(f"gen_{i:03d}", f"Generated tool number {i}", {"value": {"type": "integer"}}))
    return tools


def text_result(text: str, **extra: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], **extra)


class Upstream:
    """The server's state: its tools (``grow`` adds some) and the calls waiting for answers (modern era)."""

    def __init__(self, generated: int) -> None:
        self.tools = base_tools(generated)
        self.bus = InMemorySubscriptionBus()
        self.waiting: dict[str, str] = {}

    async def list_tools(self, _ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self.tools))

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        args = params.arguments or {}
        handler = getattr(self, f"tool_{params.name}", None)
        if handler is not None:
            return await handler(ctx, params, args)
        if params.name.startswith("gen_") or any(tool.name == params.name for tool in self.tools):
            return text_result(f"{params.name}:{args.get('value')}")
        return text_result(f"Unknown tool: {params.name}", is_error=True)

    async def tool_echo(self, _ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        return text_result(args["text"], structured_content={"echo": args["text"]})

    async def tool_pid(self, _ctx: Any, _params: Any, _args: Any) -> types.CallToolResult:
        return text_result(str(os.getpid()), structured_content={"pid": os.getpid()})

    async def tool_contents(self, _ctx: Any, _params: Any, _args: Any) -> types.CallToolResult:
        return types.CallToolResult(
            content=[
                types.TextContent(text="plain text", annotations=types.Annotations(audience=["user"], priority=0.5)),
                types.ImageContent(data=PNG, mime_type="image/png"),
                types.AudioContent(data=WAV, mime_type="audio/wav"),
                types.ResourceLink(uri="file:///tmp/report.txt", name="report", mime_type="text/plain"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="memo://one", mime_type="text/plain", text="memo")
                ),
                types.EmbeddedResource(resource=types.BlobResourceContents(uri="memo://two", blob=PNG)),
            ],
            structured_content={"kinds": 6},
            _meta={"upstream/trace": "t-1"},
        )

    async def tool_fail(self, _ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        return text_result(f"failed: {args.get('why', 'because')}", is_error=True)

    async def tool_progress(self, ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        steps = int(args["steps"])
        for step in range(1, steps + 1):
            await ctx.session.report_progress(step, steps, f"step {step}")
        return text_result(f"done {steps}")

    async def tool_ask(self, ctx: Any, params: types.CallToolRequestParams, args: dict[str, Any]) -> Any:
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message=args["question"], requested_schema=ASK_SCHEMA)
        )
        answer = await self._input(ctx, params, "q", request)
        if isinstance(answer, types.CallToolResult | types.InputRequiredResult):
            return answer
        content = answer.get("content") or {}
        return text_result(f"{answer.get('action')}:{content.get('answer', '')}")

    async def tool_sample(self, ctx: Any, params: types.CallToolRequestParams, args: dict[str, Any]) -> Any:
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(text=args["prompt"]))],
                max_tokens=50,
            )
        )
        answer = await self._input(ctx, params, "s", request)
        if isinstance(answer, types.CallToolResult | types.InputRequiredResult):
            return answer
        return text_result(f"model said: {(answer.get('content') or {}).get('text')}")

    async def _input(self, ctx: Any, params: types.CallToolRequestParams, key: str, request: Any) -> Any:
        """The answer as a wire dict, or the result to return instead (a round to ask, or an error)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            result_type = types.ElicitResult if request.method == "elicitation/create" else types.CreateMessageResult
            try:
                result = await ctx.session.send_request(request, result_type, metadata=_related(ctx))
            except Exception as exc:
                return text_result(f"client refused: {exc}", is_error=True)
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)
        responses = params.input_responses or {}
        if params.request_state is None or self.waiting.pop(params.request_state, None) is None or key not in responses:
            state = secrets.token_hex(8)
            self.waiting[state] = params.name
            return types.InputRequiredResult(input_requests={key: request}, request_state=state)
        response = responses[key]
        return (
            response.model_dump(by_alias=True, mode="json", exclude_none=True)
            if hasattr(response, "model_dump")
            else response
        )

    async def tool_grow(self, ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        self.tools.append(_tool(args["name"], f"Grown tool {args['name']}"))
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_tool_list_changed()
        await self.bus.publish(ToolsListChanged())
        return text_result(f"grew {args['name']}")

    async def tool_crash(self, _ctx: Any, _params: Any, _args: Any) -> types.CallToolResult:
        os._exit(3)

    async def tool_hang(self, _ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        await anyio.sleep(float(args.get("seconds", 3600)))
        return text_result("woke up")

    async def tool_env(self, _ctx: Any, _params: Any, args: dict[str, Any]) -> types.CallToolResult:
        value = os.environ.get(args["name"])
        return text_result("<unset>" if value is None else hashlib.sha256(value.encode()).hexdigest())

    async def tool_headers(self, ctx: Any, _params: Any, _args: Any) -> types.CallToolResult:
        request = getattr(ctx, "request", None)
        headers = {k.lower(): v for k, v in request.headers.items()} if request is not None else {}
        return text_result(str(sorted(headers)), structured_content={"headers": headers})

    async def tool_wipe(self, _ctx: Any, _params: Any, _args: Any) -> types.CallToolResult:
        return text_result("wiped")


def _related(ctx: Any) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=ctx.request_id)


class UpstreamServer(Server[Any]):
    """Advertises ``tools.listChanged`` on every transport (the HTTP manager passes no options)."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, *args, **kwargs)


def build(generated: int) -> UpstreamServer:
    state = Upstream(generated)
    return UpstreamServer(
        "simple-upstream",
        version="1.0",
        on_list_tools=state.list_tools,
        on_call_tool=state.call_tool,
        on_subscriptions_listen=ListenHandler(state.bus),
    )


async def serve_stdio(server: UpstreamServer) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: UpstreamServer, port: int, transport: str) -> None:
    import contextlib

    import uvicorn
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    manager = StreamableHTTPSessionManager(app=server)
    sse = SseServerTransport("/messages/")

    class SseEndpoint:  # a class instance: Starlette passes it the raw ASGI scope, not a Request
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            async with sse.connect_sse(scope, receive, send) as (read, write):
                await server.run(read, write, server.create_initialization_options())

    async def health(_request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with manager.run():
            yield

    routes: list[Any] = [Route("/health", health)]
    if transport == "http":
        routes.append(Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)))
    else:
        routes += [Route("/sse", endpoint=SseEndpoint()), Mount("/messages/", app=sse.handle_post_message)]
    app = Starlette(routes=routes, lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--hang-start", action="store_true", help="never answer anything (a stuck start-up)")
    args = parser.parse_args()
    print(f"simple-upstream pid={os.getpid()} transport={args.transport}", file=sys.stderr, flush=True)
    if args.hang_start:
        time.sleep(3600)
        return
    server = build(args.tools)
    if args.transport == "stdio":
        asyncio.run(serve_stdio(server))
    else:
        serve_http(server, args.port, args.transport)


if __name__ == "__main__":
    main()
