"""``tools/list`` and ``tools/call`` over a ``ToolCatalog`` and a ``CallRouter``."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from apcore_mcp.calls.router import CallRouter
from apcore_mcp.mcp.admission import Refusals
from apcore_mcp.mcp.edge import Edge
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.mcp.results import call_result
from apcore_mcp.tools.catalog import ToolCatalog


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


class ToolHandlers:
    """The two tool methods; a call is answered with a plain wire dict the SDK validates once.

    Who may call what is the router's to decide (its authorization step); a list is filtered,
    when lists are, by ``mcp.access.ToolAccess`` as middleware.
    """

    def __init__(self, catalog: ToolCatalog, router: CallRouter, edge: Edge, refusals: Refusals) -> None:
        self.catalog = catalog
        self.router = router
        self.edge = edge
        self.refusals = refusals

    async def list_tools(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.catalog.mcp_tools())

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        call = self.edge.call_context(ctx, request_state=params.request_state, input_responses=params.input_responses)
        outcome = await self.router.call(params.name, params.arguments, call)
        if outcome.refusal is not None:
            raise self.refusals.error(outcome.refusal)
        return call_result(outcome, modern=is_modern(ctx))
