"""An HTTP API described by OpenAPI, mounted like an upstream MCP server: one tool per operation.

An ``openapi`` entry of ``mcp.json`` (or ``--from-openapi``) is a server of the config like any
other: it is named, joins toolsets, its tools are ``<server>.<operation>`` modules and every call
goes through the Executor (ACL, approval, limits, middleware). ``OpenApiSource`` is what
``UpstreamRuntime`` mounts for it in place of an ``UpstreamSource``: ``open`` reads the document
and registers one ``OpenApiTool`` per operation; calls go out through one HTTP client owned by
the source, with the entry's ``headers`` and ``timeout`` and no redirects followed (a redirect
would carry the headers to wherever it points).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import httpx2
import mcp.types as types
from apcore import Context, Registry
from apcore.errors import InvalidInputError

from apcore_mcp.calls.held import HeldTools
from apcore_mcp.upstream.config.parse import ServerSpec
from apcore_mcp.upstream.expand import Redactor
from apcore_mcp.upstream.held import report_held
from apcore_mcp.upstream.module import UpstreamTool
from apcore_mcp.upstream.names import module_ids, server_segment
from apcore_mcp.upstream.openapi.call import ArgumentError, build_request, send
from apcore_mcp.upstream.openapi.document import base_url, read_document
from apcore_mcp.upstream.openapi.operations import Operation, OperationError, operations
from apcore_mcp.upstream.pins.keeper import PinKeeper, warn_unpinned

logger = logging.getLogger(__name__)

OPENAPI_TAG = "openapi"


class OpenApiTool(UpstreamTool):
    """The apcore module of one operation: an upstream tool whose DELETE asks for approval."""

    def __init__(self, source: OpenApiSource, operation: Operation) -> None:
        super().__init__(source, source.name, operation.tool, timeout=source.spec.timeout)
        # MCP clients may ignore destructiveHint; approval is what this server itself enforces.
        self.annotations = dataclasses.replace(self.annotations, requires_approval=self.annotations.destructive)
        self.tags = [*self.tags, OPENAPI_TAG]
        self.metadata = {**self.metadata, "openapi": {"method": operation.method, "path": operation.path}}


class OpenApiSource:
    """One ``openapi`` entry's operations in ``registry`` (see the module doc)."""

    def __init__(
        self,
        spec: ServerSpec,
        registry: Registry,
        *,
        segment: str | None = None,
        max_bytes: int,
        redactor: Redactor,
        pins: PinKeeper | None = None,
        held: HeldTools | None = None,
    ) -> None:
        self.spec = spec
        self.held = held
        """Told which operations the pins hold, so a call can name the drift (``calls/held.py``)."""
        self.pins = pins
        """Which operations are served (``upstream/pins``): a drifted or unapproved one is never registered."""
        self.segment = segment or server_segment(spec.name)
        self.registry = registry
        self._max_bytes = max_bytes
        self._redactor = redactor
        self._operations: dict[str, Operation] = {}
        self._modules: dict[str, OpenApiTool] = {}
        self._client: httpx2.AsyncClient | None = None
        self._base = ""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def module_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._modules))

    async def open(self) -> None:
        """Read the document and register its operations.

        Raises:
            UpstreamUnavailable: the document could not be read or gives no base URL.
        """
        document = await read_document(self.spec, self._max_bytes)
        self._base = base_url(self.spec, document)
        self._operations = self._select(document)
        self._client = httpx2.AsyncClient(follow_redirects=False, trust_env=False)
        warn_unpinned(self.pins, self.name, pin=self.spec.pin)
        self.recheck()
        logger.info("OpenAPI server %r mounted: %d operation(s)", self.name, len(self._modules))

    def _select(self, document: dict[str, Any]) -> dict[str, Operation]:
        config_headers = frozenset(key.lower() for key, _value in self.spec.headers)
        wanted = set(self.spec.operations) if self.spec.operations is not None else None
        found: dict[str, Operation] = {}
        for operation in operations(document, config_headers=config_headers):
            if isinstance(operation, OperationError):
                logger.warning("OpenAPI server %r: %s; left out", self.name, operation)
            elif wanted is None or operation.name in wanted:
                found[operation.name] = operation
        for missing in sorted((wanted or set()) - set(found)):
            logger.warning("OpenAPI server %r: operation %r is not in the document (or left out)", self.name, missing)
        return found

    async def listed_tools(self) -> list[types.Tool]:
        """Every selected operation as a tool, served or held (for ``pins diff``)."""
        return [operation.tool for operation in self._operations.values()]

    def recheck(self) -> None:
        """Register the operations the pins admit and unregister the others (at open, and when the pins change)."""
        served = {operation.name: operation for operation in self._operations.values()}
        if self.pins is not None:
            tools = [operation.tool for operation in served.values()]
            admitted = {tool.name for tool in self.pins.admit(self.name, tools, pin=self.spec.pin)}
            served = {name: operation for name, operation in served.items() if name in admitted}
        report_held(self.held, self.pins, self.name, self.segment, self._operations)
        ids = module_ids(self.segment, self._operations)
        for name in self._operations:
            if name not in served and ids[name] in self._modules:
                self._modules.pop(ids[name], None)
                self.registry.unregister(ids[name])
        for name, operation in served.items():
            if ids[name] not in self._modules:
                self._register(ids[name], operation)

    def _register(self, module_id: str, operation: Operation) -> None:
        try:
            module = OpenApiTool(self, operation)
            self.registry.register(module_id, module)
        except (ValueError, InvalidInputError) as exc:
            logger.warning("OpenAPI server %r: %r not mounted as %s: %s", self.name, operation.name, module_id, exc)
            return
        self._modules[module_id] = module

    async def close(self) -> None:
        """Unregister every operation and close the HTTP client. Idempotent."""
        for module_id in list(self._modules):
            self._modules.pop(module_id, None)
            self.registry.unregister(module_id)
        if self.pins is not None:
            self.pins.forget(self.name)
        if self.held is not None:
            self.held.drop(self.name)
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def update_spec(self, spec: ServerSpec) -> None:
        """Take settings that need no new client (timeout, description) from a reloaded config."""
        self.spec = spec

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], context: Context, *, repeatable: bool = False
    ) -> types.CallToolResult:
        """Call the operation ``tool`` (its operationId) with ``arguments``; ``context`` is not sent anywhere."""
        operation, client = self._operations.get(tool), self._client
        if operation is None or client is None:
            raise RuntimeError(f"openapi server {self.name!r} has no open operation {tool!r}")
        try:
            request = build_request(client, self._base, operation, arguments, dict(self.spec.headers))
        except ArgumentError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        request.extensions["timeout"] = httpx2.Timeout(self.spec.timeout).as_dict()
        return await send(
            client, request, operation, server=self.name, max_bytes=self._max_bytes, redactor=self._redactor
        )
