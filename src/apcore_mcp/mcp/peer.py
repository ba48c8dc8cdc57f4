"""A ``Peer`` (see ``apcore_mcp.context``) over the SDK's per-request context of a tools/call.

Progress goes out in both protocol eras (the SDK routes it to the request's own stream, or
to the in-process caller). Requests to the client (elicitation, sampling, roots) are sent in
the handshake era, on the call's own stream; in the 2026-07-28 era this peer declares it
cannot ask (the input-required round trip belongs to the edge that can seal ``requestState``).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from apcore_mcp.context import Era, InputKind, LogLevel

logger = logging.getLogger(__name__)

_REQUESTS: dict[str, tuple[Any, Any]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}
_CAPABILITY = {
    "elicitation": types.ClientCapabilities(elicitation=types.ElicitationCapability()),
    "sampling": types.ClientCapabilities(sampling=types.SamplingCapability()),
    "roots": types.ClientCapabilities(roots=types.RootsCapability()),
}


class SdkPeer:
    """The client behind one SDK request context."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx

    @property
    def era(self) -> Era:
        return "modern" if self._ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else "handshake"

    def can_ask(self, kind: InputKind) -> bool:
        session = self._ctx.session
        if self.era != "handshake" or not session.can_send_request:
            return False
        return session.check_client_capability(_CAPABILITY[kind])

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        answers: dict[str, dict[str, Any]] = {}
        related = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        for key, request in requests.items():
            request_type, result_type = _REQUESTS[str(request.get("method"))]
            typed = request_type.model_validate({"method": request["method"], "params": request.get("params") or {}})
            try:
                result = await self._ctx.session.send_request(typed, result_type, metadata=related)
            except MCPError as exc:
                logger.info("The client refused %s: %s", request["method"], exc.error.message)
                continue
            answers[key] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answers

    async def log(self, level: LogLevel, data: Any, logger: str | None) -> None:
        """Logging is not forwarded by this peer (the client did not ask for this call's logs)."""
