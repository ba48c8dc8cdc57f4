"""Resources: ``docs://{module_id}`` for every documented tool, and resource modules.

Handlers for ``resources/list``, ``resources/templates/list``, ``resources/read``,
``resources/subscribe``/``unsubscribe`` (handshake era) and completion of template variables.
"""

from __future__ import annotations

import weakref
from typing import Any

import mcp.types as types
from mcp.server.connection import Connection
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp._sdk import connection_of
from apcore_mcp.calls.budget import owner_of
from apcore_mcp.calls.kept_results import RESULT_SCHEME
from apcore_mcp.calls.router import CallRouter
from apcore_mcp.mcp.admission import Refusals
from apcore_mcp.mcp.edge import Edge
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.mcp.results import complete, input_required_result, missing_capability_error
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.resources import DOCS_SCHEME, DOCS_TEMPLATE, contents_of
from apcore_mcp.tools.views import APP_MIME_TYPE, viewed_module

MAX_COMPLETIONS = 100


def not_found(uri: str) -> MCPError:
    """SEP-2164: -32602 with the URI in ``data``."""
    return MCPError(types.INVALID_PARAMS, "Resource not found", data={"uri": uri})


class Subscriptions:
    """Which URIs each handshake-era connection subscribed to (dropped with the connection)."""

    def __init__(self) -> None:
        self._by_connection: weakref.WeakKeyDictionary[Connection, set[str]] = weakref.WeakKeyDictionary()

    def add(self, connection: Connection | None, uri: str) -> None:
        if connection is not None:
            self._by_connection.setdefault(connection, set()).add(uri)

    def remove(self, connection: Connection | None, uri: str) -> None:
        if connection is not None:
            self._by_connection.get(connection, set()).discard(uri)

    def subscribers(self, uri: str) -> list[Connection]:
        return [connection for connection, uris in list(self._by_connection.items()) if uri in uris]


class ResourceHandlers:
    def __init__(
        self, catalog: ToolCatalog, router: CallRouter, edge: Edge, subscriptions: Subscriptions, refusals: Refusals
    ) -> None:
        self.catalog = catalog
        self.router = router
        self.edge = edge
        self.subscriptions = subscriptions
        self.refusals = refusals

    async def list_resources(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                uri=f"{DOCS_SCHEME}{record.name}",
                name=record.name,
                description=f"Documentation of {record.name}",
                mime_type="text/plain",
            )
            for record in self.catalog.records()
            if record.documentation
        ]
        resources.extend(
            types.Resource(
                uri=record.view.uri,
                name=record.view.name,
                description=f"The MCP Apps view of {record.name}",
                mime_type=APP_MIME_TYPE,
                _meta={"ui": record.view.ui},
            )
            for record in self.catalog.records()
            if record.view is not None
        )
        for record in self.catalog.resource_records():
            spec = record.resource
            if spec is not None and spec.template is None:
                resources.append(
                    types.Resource(uri=spec.uri, name=spec.name, description=spec.description, mime_type=spec.mime_type)
                )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [
            types.ResourceTemplate(
                uri_template=DOCS_TEMPLATE,
                name="module-docs",
                description="The documentation of a tool, by module id",
                mime_type="text/plain",
            )
        ]
        for record in self.catalog.resource_records():
            spec = record.resource
            if spec is not None and spec.template is not None:
                templates.append(
                    types.ResourceTemplate(
                        uri_template=spec.uri, name=spec.name, description=spec.description, mime_type=spec.mime_type
                    )
                )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> HandlerResult:
        uri = str(params.uri)
        if uri.startswith(DOCS_SCHEME):
            record = self.catalog.get(uri[len(DOCS_SCHEME) :])
            if record is None or not record.documentation:
                raise not_found(uri)
            docs = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": record.documentation}]}
            return complete(docs, modern=is_modern(ctx))
        viewed = viewed_module(uri)
        if viewed is not None:
            tool = self.catalog.get(viewed)
            if tool is None or tool.view is None:
                raise not_found(uri)
            return complete({"contents": [tool.view.contents()]}, modern=is_modern(ctx))
        if uri.startswith(RESULT_SCHEME):
            return complete(self._kept_result(ctx, uri), modern=is_modern(ctx))
        found = self._resolve(uri)
        if found is None:
            raise not_found(uri)
        record, inputs = found
        call = self.edge.call_context(ctx, request_state=params.request_state, input_responses=params.input_responses)
        outcome = await self.router.read_module(record, inputs, call)
        if outcome.refusal is not None:  # admitted like any module run
            raise self.refusals.error(outcome.refusal)
        if outcome.input_required is not None:
            return input_required_result(outcome.input_required)
        if outcome.missing_capability is not None:
            if is_modern(ctx):
                raise missing_capability_error(outcome.missing_capability.kind)
            raise MCPError(types.INVALID_REQUEST, "This resource needs a client capability the client did not declare")
        if outcome.error is not None:
            raise MCPError(types.INTERNAL_ERROR, outcome.error.message, data={"uri": uri})
        spec = record.resource
        assert spec is not None
        return complete({"contents": [contents_of(uri, outcome.value, spec.mime_type)]}, modern=is_modern(ctx))

    def _kept_result(self, ctx: ServerRequestContext[Any, Any], uri: str) -> dict[str, Any]:
        """A whole result kept behind a cut one's link: its caller's only, "not found" for anyone else."""
        links = self.router.budget.links if self.router.budget is not None else None
        owner = owner_of(self.edge.call_context(ctx)) if links is not None else None
        text = links.read(owner, uri) if links is not None and owner is not None else None
        if text is None:
            raise not_found(uri)
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}

    def _resolve(self, uri: str) -> tuple[ToolRecord, dict[str, str]] | None:
        for record in self.catalog.resource_records():
            spec = record.resource
            inputs = spec.match(uri) if spec is not None else None
            if inputs is not None:
                return record, inputs
        return None

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> HandlerResult:
        self.subscriptions.add(connection_of(ctx), str(params.uri))
        return {}

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> HandlerResult:
        self.subscriptions.remove(connection_of(ctx), str(params.uri))
        return {}

    def complete(self, uri_template: str, argument: str, prefix: str) -> list[str]:
        """Candidates for a template variable: module ids for ``docs://``, else the declared values."""
        if uri_template == DOCS_TEMPLATE and argument == "module_id":
            return [record.name for record in self.catalog.records() if record.name.startswith(prefix)]
        for record in self.catalog.resource_records():
            spec = record.resource
            if spec is not None and spec.uri == uri_template:
                return spec.completions(argument, prefix)
        return []
