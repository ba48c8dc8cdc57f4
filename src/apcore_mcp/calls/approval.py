"""apcore's approval gate answered by the person behind the MCP client, failing closed.

``MCPApprovalHandler`` is the ``ApprovalHandler`` the bridge installs on the Executor it
builds. For a module with ``requires_approval`` it asks the client's user to confirm, showing
the module, its description and the arguments: by elicitation in the handshake era, by an
input-required round in the 2026-07-28 era. Anything but an explicit "yes" (decline, cancel,
no answer, a client that cannot ask, a call from outside MCP) is a rejection, and the module
does not run. An ``accept`` is not proof of a human: the ACL stays authoritative.

A 2026-07-28 "yes" is single-use: the sealed ``requestState`` it came with is recorded as
spent when the approval is granted (``apcore_mcp.calls.used_approvals``), and the same state sent
again approves nothing. A declined answer spends nothing; a granted one stays spent even if
the module then fails. A record that cannot tell (full, Redis away) refuses the approval.

For an Executor of your own: ``executor.set_approval_handler(MCPApprovalHandler())``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from apcore import Executor
from apcore.approval import ApprovalRequest, ApprovalResult

from apcore_mcp._apcore import executor_approval_handler
from apcore_mcp.calls.context import InputRequired, Peer, call_context
from apcore_mcp.calls.spans import approval_span, tracing_on
from apcore_mcp.calls.used_approvals import MemoryUsedApprovals, UsedApprovals, UsedApprovalsUnavailable, state_digest

logger = logging.getLogger(__name__)

APPROVAL_KEY_PREFIX = "approve"
_MAX_ARGUMENTS_SHOWN = 2000

CANNOT_ASK = (
    "the client cannot ask its user for confirmation (it does not support elicitation, "
    "or the connection has no channel back to it); use a client that supports elicitation, "
    "or the operator may turn approval off with --approval auto"
)
NO_BACK_CHANNEL = (
    "this server runs stateless (for several replicas), where a 2025-11-25 client cannot be asked for "
    "confirmation: each request is answered on its own and an answer would have nowhere to go; "
    "use a 2026-07-28 client (its confirmation rounds work across replicas), or a stateful server "
    "with session affinity"
)
NO_CLIENT = "no interactive client is attached to this call; approve it from an MCP client or the explorer"
ALREADY_USED = (
    "this confirmation was already used: a confirmation sent with a requestState approves one call; "
    "call the tool again to be asked again"
)
NOT_RECORDED = (
    "the server cannot record that this confirmation is used ({why}), and an unrecorded one could be "
    "replayed, so it does not count; try again later"
)
NO_STATE = "a confirmation must come with the requestState of the round that asked for it"
DEFAULT_STATE_TTL = 600.0
"""How long a 2026-07-28 state can live unless told (``Settings.request_state_ttl``'s default)."""


def confirmation_schema(module_id: str) -> dict[str, Any]:
    """The form a client shows: one required yes/no field."""
    return {
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": f"Run {module_id}?",
                "description": "Confirm that this tool may run with the arguments shown.",
            }
        },
        "required": ["approve"],
    }


def confirmation_message(request: ApprovalRequest) -> str:
    """What the user is asked: the module, what it does, and the exact arguments."""
    arguments = json.dumps(request.arguments, ensure_ascii=False, sort_keys=True, default=str)
    if len(arguments) > _MAX_ARGUMENTS_SHOWN:
        arguments = arguments[:_MAX_ARGUMENTS_SHOWN] + "... (truncated)"
    lines = [f"The tool {request.module_id} requires your approval before it runs."]
    if request.description:
        lines.append(f"What it does: {request.description}")
    if getattr(request.annotations, "destructive", False):
        lines.append("It is marked destructive.")
    lines.append(f"Arguments: {arguments}")
    return "\n".join(lines)


def _rejected(reason: str) -> ApprovalResult:
    return ApprovalResult(status="rejected", reason=reason)


class MCPApprovalHandler:
    """Confirms ``requires_approval`` calls with the MCP client's user; fails closed.

    ``used`` records the 2026-07-28 states that granted an approval (default: this process's
    own, bounded, record; the HTTP app swaps in the replicas' Redis one with ``redis_url``).
    ``state_ttl`` is how long such a state can be sent, so how long a record entry is kept: a
    bridge serving this handler raises it to its ``Settings.request_state_ttl``; unset and not
    served by a bridge, ``DEFAULT_STATE_TTL``.
    """

    def __init__(self, *, used: UsedApprovals | None = None, state_ttl: float | None = None) -> None:
        self.used: UsedApprovals = used if used is not None else MemoryUsedApprovals()
        self.state_ttl = state_ttl

    def cover_states_of(self, ttl: float) -> None:
        """Keep record entries at least ``ttl`` seconds (a server sealing states that live that long)."""
        self.state_ttl = ttl if self.state_ttl is None else max(self.state_ttl, ttl)

    async def request_approval(self, request: ApprovalRequest) -> ApprovalResult:
        if not tracing_on():
            return await self._approval(request)
        with approval_span(request.module_id) as span:
            try:
                decision = await self._approval(request)
            except InputRequired:  # 2026-07-28: asked; the answer comes with the client's retry
                span.set_attribute("apcore.approval.status", "asked")
                raise
            span.set_attribute("apcore.approval.status", decision.status)
            return decision

    async def _approval(self, request: ApprovalRequest) -> ApprovalResult:
        call = call_context(request.context)
        if call is None:
            return _rejected(NO_CLIENT)
        if call.confirmed:
            return ApprovalResult(status="approved", approved_by=f"{call.origin} confirmation")
        if call.peer is not None and not call.peer.back_channel:
            return _rejected(NO_BACK_CHANNEL)
        if call.peer is None or not call.peer.can_ask("elicitation"):
            return _rejected(CANNOT_ASK)
        key = f"{APPROVAL_KEY_PREFIX}-{request.module_id.replace('.', '-')}"
        answer = await call.elicit_result(
            confirmation_message(request), confirmation_schema(request.module_id), key=key
        )
        decision = _decide(answer)
        if decision.status == "approved" and call.peer.era == "modern":
            return await self._spend(call.peer, decision)
        return decision

    async def _spend(self, peer: Peer, decision: ApprovalResult) -> ApprovalResult:
        """``decision`` if the state that carried the "yes" was not used before (now it is); else a rejection."""
        if peer.request_state is None:
            return _rejected(NO_STATE)
        try:
            spent = await peer.spend_state(self._claim)
        except UsedApprovalsUnavailable as exc:
            logger.warning("An approval was refused: the used-approval record cannot tell (%s)", exc)
            return _rejected(NOT_RECORDED.format(why=exc))
        if not spent:
            logger.warning("An approval was refused: its requestState was already used")
            return _rejected(ALREADY_USED)
        return decision

    async def _claim(self, state: str) -> bool:
        ttl = self.state_ttl if self.state_ttl is not None else DEFAULT_STATE_TTL
        return await self.used.claim(state_digest(state), ttl)

    async def check_approval(self, approval_id: str) -> ApprovalResult:
        return _rejected("approvals are given during the call; there is nothing pending to resume")


def _decide(answer: dict[str, Any] | None) -> ApprovalResult:
    if answer is None:
        return ApprovalResult(status="timeout", reason="the client did not answer the confirmation request")
    action = answer.get("action")
    content = answer.get("content")
    if action == "accept" and isinstance(content, dict) and content.get("approve") is True:
        return ApprovalResult(status="approved", approved_by="mcp client user")
    if action == "accept":
        return _rejected("the user did not confirm")
    if action == "cancel":
        return _rejected("the user cancelled the confirmation")
    return _rejected("the user declined")


def mcp_approval_handler(executor: Executor) -> MCPApprovalHandler | None:
    """The ``MCPApprovalHandler`` an Executor confirms approvals with, if that is its handler."""
    handler = executor_approval_handler(executor)
    return handler if isinstance(handler, MCPApprovalHandler) else None
