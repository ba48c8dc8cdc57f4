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
from apcore_mcp.calls.audit import AuditStore, argument_digest, audit_decision, redacted_arguments
from apcore_mcp.calls.context import CallContext, InputRequired, Peer, call_context
from apcore_mcp.calls.person_approval import ApprovalDesk, ApprovalPolicy, PendingApproval
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
DENIED = "the operator's approval policy refuses this tool (approval policy: deny)"
PERSON_CANNOT_ASK = (
    "a person must approve this tool on the server's approval page, and the client cannot be sent its link "
    "(it does not support URL elicitation, or the connection has no channel back to it)"
)
NO_PAGE = (
    "a person must approve this tool on the server's approval page, and no approval page is served "
    "(person approvals need the HTTP transport)"
)
PERSON_BUSY = "too many approvals are waiting for a person (for this caller or in all); try again later"
PERSON_KEY = "person"
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

    def __init__(
        self,
        *,
        used: UsedApprovals | None = None,
        state_ttl: float | None = None,
        policy: ApprovalPolicy | None = None,
        desk: ApprovalDesk | None = None,
    ) -> None:
        self.used: UsedApprovals = used if used is not None else MemoryUsedApprovals()
        self.state_ttl = state_ttl
        self.policy = policy if policy is not None else ApprovalPolicy()
        """Who decides each module's approval (``client``, ``person`` or ``deny``)."""
        self._policy_given = policy is not None
        self.audit_store: AuditStore | None = None
        """Where decisions are kept besides the log (the replicas' Redis swaps one in with ``audit_retention``)."""
        self.desk = desk if desk is not None else ApprovalDesk()
        """Where ``person`` approvals wait; the approval page decides on it."""

    def follow_policy(self, policy: ApprovalPolicy) -> None:
        """Take the serving settings' policy, unless this handler was built with one of its own."""
        if not self._policy_given:
            self.policy = policy

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
        policy = self.policy.for_module(request.annotations)
        if policy == "deny":
            return _rejected(DENIED)
        if call is None:
            return _rejected(NO_CLIENT)
        if policy == "person":  # neither the explorer's dialog nor the client's own answer counts
            return await self._person(call, request)
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
        return await self.used.claim(state_digest(state), self._ttl())

    async def _person(self, call: CallContext, request: ApprovalRequest) -> ApprovalResult:
        """Send the client a link to the approval page, then wait for the person's decision there."""
        digest = argument_digest(request.arguments)
        asked_by = caller_name(call)
        if not self.desk.page_served:
            return _rejected(NO_PAGE)
        pending = self._resumed(call, request.module_id, digest, asked_by)
        if pending is None:
            if call.peer is None or not call.peer.back_channel or not call.peer.can_ask("url_elicitation"):
                return _rejected(PERSON_CANNOT_ASK)
            ttl = self.policy.wait + (self._ttl() if call.era == "modern" else 0.0)
            arguments = redacted_arguments(request.arguments)
            pending = self.desk.open(
                tool=request.module_id, digest=digest, asked_by=asked_by, arguments=arguments, ttl=ttl
            )
            if pending is None:
                return _rejected(PERSON_BUSY)
        key = f"{PERSON_KEY}-{pending.id}"
        try:
            answer = (await call.request_inputs({key: self._link_request(call, request, pending)}))[key]
        except InputRequired:
            self.desk.release(pending)  # 2026-07-28: the retry carrying the link's answer claims it again
            raise
        if answer is None or answer.get("action") != "accept":
            self.desk.close(pending)
            await self._audit(pending, "declined", "mcp client", "url elicitation")
            return _rejected("the client did not open the approval page")
        decision = await self.desk.wait(pending, self.policy.wait)
        await self._audit(pending, decision, pending.decided_by or "nobody", pending.how or "timeout")
        if decision == "approved":
            return ApprovalResult(status="approved", approved_by=f"person {pending.decided_by}")
        if decision == "timeout":
            return ApprovalResult(status="timeout", reason="no person decided on the approval page in time")
        return _rejected("a person declined on the approval page")

    def _resumed(self, call: CallContext, tool: str, digest: str, asked_by: str) -> PendingApproval | None:
        """2026-07-28 retry: the pending approval its sealed round asked about, if it is this very call's."""
        # The keys of ModernPeer.answers come from the server-sealed requestState: a client cannot make one up.
        answers = getattr(call.peer, "answers", None)
        if call.era != "modern" or not isinstance(answers, dict):
            return None
        for key in answers:
            prefix, _, approval_id = str(key).partition("-")
            if prefix != PERSON_KEY:
                continue
            pending = self.desk.claim(approval_id)
            if pending is None:
                continue
            if (pending.tool, pending.digest, pending.asked_by) == (tool, digest, asked_by):
                return pending
            self.desk.release(pending)  # another call's approval: it stays for that call
        return None

    def _link_request(self, call: CallContext, request: ApprovalRequest, pending: PendingApproval) -> dict[str, Any]:
        params: dict[str, Any] = {
            "mode": "url",
            "message": f"A person must approve the tool {request.module_id} on this server's approval page.",
            "url": self.policy.page_url(self.desk.token(pending)),
        }
        if call.era == "handshake":
            params["elicitationId"] = pending.id  # required on the 2025-11-25 wire, gone in 2026-07-28
        return {"method": "elicitation/create", "params": params}

    async def _audit(self, pending: PendingApproval, decision: str, decided_by: str, how: str) -> None:
        record = audit_decision(
            tool=pending.tool,
            digest=pending.digest,
            asked_by=pending.asked_by,
            decision=decision,
            decided_by=decided_by,
            how=how,
            arguments=pending.arguments if self.policy.audit_arguments else None,
        )
        if self.audit_store is not None:
            await self.audit_store.keep(record)

    def _ttl(self) -> float:
        return self.state_ttl if self.state_ttl is not None else DEFAULT_STATE_TTL

    async def check_approval(self, approval_id: str) -> ApprovalResult:
        return _rejected("approvals are given during the call; there is nothing pending to resume")


def caller_name(call: CallContext) -> str:
    """Who asked, as an audit record and the approval page name them: the identity, else the caller key."""
    return call.identity.id if call.identity is not None else call.caller


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
