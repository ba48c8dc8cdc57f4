"""The low-level MCP server: tools and documentation resources over a ``ToolCatalog``."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from apcore_mcp.calls import CallRouter, to_call_tool_result
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.context import CallContext
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.peer import SdkPeer

DOCS_SCHEME = "docs://"


class ApcoreServer(Server[Any]):
    """A low-level ``Server`` whose default capabilities tell the truth about list changes.

    The Streamable HTTP session manager builds initialization options with no arguments,
    which would advertise ``listChanged: false``; here the default follows ``live``.
    """

    def __init__(self, name: str, *, version: str, live: bool, **handlers: Any) -> None:
        super().__init__(name, version=version, **handlers)
        self.live = live

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=self.live, resources_changed=self.live)
        return super().create_initialization_options(notification_options, experimental_capabilities, extensions)


class ToolListCache:
    """Server middleware answering ``tools/list`` from the previous answer while nothing changed.

    The SDK validates and serializes the whole result on every request (about 70 ms for
    1,000 tools); the answer depends only on the catalog and the protocol version, so the
    wire dict the SDK produced is kept per version and reused until the catalog changes.
    """

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog
        self._answers: dict[str, tuple[int, dict[str, Any]]] = {}

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/list" or (ctx.params or {}).get("cursor") is not None:
            return await call_next(ctx)
        generation = self._catalog.generation
        cached = self._answers.get(ctx.protocol_version)
        if cached is not None and cached[0] == generation:
            return dict(cached[1])
        result = await call_next(ctx)
        if isinstance(result, dict) and generation == self._catalog.generation:
            self._answers[ctx.protocol_version] = (generation, result)
            return dict(result)
        return result


def build_server(
    catalog: ToolCatalog,
    router: CallRouter,
    notifier: ListChangedNotifier,
    *,
    name: str,
    version: str,
    live: bool,
) -> ApcoreServer:
    """An MCP server listing ``catalog`` and calling through ``router``.

    With ``live``, list changes reach clients: handshake-era connections through
    ``notifier`` and 2026-07-28 clients through ``subscriptions/listen``.
    """

    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=catalog.mcp_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        call = CallContext(peer=SdkPeer(ctx))
        return to_call_tool_result(await router.call(params.name, params.arguments, call))

    async def list_resources(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list_doc_resources(catalog))

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return read_doc_resource(catalog, str(params.uri))

    server = ApcoreServer(
        name,
        version=version,
        live=live,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_subscriptions_listen=ListenHandler(notifier.bus) if live else None,
    )
    server.middleware.append(notifier)
    server.middleware.append(ToolListCache(catalog))
    return server


def list_doc_resources(catalog: ToolCatalog) -> list[types.Resource]:
    """One ``docs://{module_id}`` resource per module with documentation."""
    return [
        types.Resource(
            uri=f"{DOCS_SCHEME}{record.name}",
            name=record.name,
            description=f"Documentation of {record.name}",
            mime_type="text/plain",
        )
        for record in catalog.records()
        if record.documentation
    ]


def read_doc_resource(catalog: ToolCatalog, uri: str) -> types.ReadResourceResult:
    """The documentation text behind a ``docs://`` URI.

    Raises:
        MCPError: ``INVALID_PARAMS`` (the spec's code for an unknown resource) otherwise.
    """
    record = catalog.get(uri[len(DOCS_SCHEME) :]) if uri.startswith(DOCS_SCHEME) else None
    if record is None or not record.documentation:
        raise MCPError(types.INVALID_PARAMS, f"Resource not found: {uri}", data={"uri": uri})
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=record.documentation)]
    )
