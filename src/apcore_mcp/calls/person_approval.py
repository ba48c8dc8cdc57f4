"""Approval a person decides: the policy per module, and the desk where pending approvals wait.

The policy (``approval_policy``) says who decides an approval-gated call: ``client`` (the
client's elicitation answer), ``person`` (a person on this server's approval page) or ``deny``.
``destructive_approval`` makes destructive modules ``person``. A module may declare its own
with ``ModuleAnnotations(extra={"mcp.approval": ...})``, but only to be *stricter*
(client < person < deny): the strictest of the three wins, so a module cannot loosen what the
operator set, and an unknown value counts as ``deny``.

A ``person`` call opens a ``PendingApproval`` on the ``ApprovalDesk`` and waits for a decision.
The page's link carries a token naming the approval and signed (HMAC-SHA256) with the desk's
secret over the approval's id, tool, argument digest and expiry: a forged or altered token,
one for another approval, an expired one or one already decided decides nothing. This desk is
in this process (a random secret per process); several workers of one machine share theirs
through their store instead (``replicas/machine/person_approvals.py``), so any worker's page
decides a call waiting in another. Replicas sharing Redis do not yet: there a ``person``
approval reaches only the process that asked (see the docs).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

Decision = Literal["approved", "declined", "timeout"]
STRICTNESS: dict[str, int] = {"client": 0, "person": 1, "deny": 2}
APPROVAL_ANNOTATION = "mcp.approval"
MAX_PENDING = 1000
"""Approvals waiting at once on one desk; past it a new one is refused (each holds a call open)."""
MAX_PENDING_PER_CALLER = 32
"""Approvals one caller may have waiting at once, so one caller cannot fill the desk for all."""
APPROVALS_PATH = "/approvals"


def module_policy(default: str, *, destructive_person: bool, annotations: object) -> str:
    """The strictest of the operator's ``default``, the destructive rule and the module's own word."""
    policies = [default]
    if destructive_person and getattr(annotations, "destructive", False):
        policies.append("person")
    extra = getattr(annotations, "extra", None)
    declared = extra.get(APPROVAL_ANNOTATION) if isinstance(extra, Mapping) else None
    if declared is not None:
        policies.append(declared if declared in STRICTNESS else "deny")  # unknown: fail closed
    return max(policies, key=lambda policy: STRICTNESS.get(policy, STRICTNESS["deny"]))


@dataclass(eq=False)
class PendingApproval:
    """One call waiting for a person: what it is, who asked, and the decision once taken."""

    id: str
    tool: str
    digest: str
    asked_by: str
    arguments: str
    """The arguments as the page shows them (redacted)."""
    expires_at: float
    claimed: bool = True
    """A call is waiting on it (a 2026-07-28 call between rounds is not, until its retry claims it)."""
    decision: Decision | None = None
    decided_by: str = ""
    how: str = ""
    _decided: anyio.Event = field(default_factory=anyio.Event, repr=False)


class ApprovalDesk:
    """The approvals waiting for a person in this process, bounded; tokens signed with its secret."""

    def __init__(
        self,
        *,
        secret: bytes | None = None,
        max_pending: int = MAX_PENDING,
        max_per_caller: int = MAX_PENDING_PER_CALLER,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self.max_pending = max_pending
        self.max_per_caller = max_per_caller
        self._clock = clock
        self._pending: dict[str, PendingApproval] = {}
        self.page_served = False
        """Whether an HTTP app serves this desk's approval page (stdio and in-memory serve none)."""
        self._lock = threading.Lock()

    def open(self, *, tool: str, digest: str, asked_by: str, arguments: str, ttl: float) -> PendingApproval | None:
        """A new pending approval living ``ttl`` seconds; ``None`` when the desk (or the caller's share) is full."""
        with self._lock:
            self._drop_expired()
            if len(self._pending) >= self.max_pending:
                return None
            if sum(pending.asked_by == asked_by for pending in self._pending.values()) >= self.max_per_caller:
                return None
            pending = PendingApproval(
                id=secrets.token_urlsafe(16),
                tool=tool,
                digest=digest,
                asked_by=asked_by,
                arguments=arguments,
                expires_at=self._clock() + ttl,
            )
            self._pending[pending.id] = pending
            return pending

    def token(self, pending: PendingApproval) -> str:
        """The page's token for ``pending``: its id and a signature binding tool, digest and expiry."""
        return f"{pending.id}.{self._sign(pending)}"

    def form_key(self, token: str) -> str:
        """The approval page's form field for ``token``: only the page this server rendered has it."""
        digest = hmac.new(self._secret, b"form\n" + token.encode("utf-8", "replace"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def form_key_holds(self, token: str, key: str) -> bool:
        return hmac.compare_digest(self.form_key(token).encode("ascii"), key.encode("utf-8", "replace"))

    def claim(self, approval_id: str) -> PendingApproval | None:
        """The open approval ``approval_id`` for the one call that may wait on it; ``None`` if another does."""
        with self._lock:
            self._drop_expired()
            pending = self._pending.get(approval_id)
            if pending is None or pending.claimed:
                return None
            pending.claimed = True
            return pending

    def release(self, pending: PendingApproval) -> None:
        """``pending`` waits for a claim again (a 2026-07-28 round ended, or it is another call's)."""
        pending.claimed = False

    def find(self, token: str) -> PendingApproval | None:
        """The undecided approval ``token`` names, if its signature holds and it has not expired."""
        with self._lock:
            return self._find_locked(token)

    def decide(self, token: str, *, approve: bool, decided_by: str, how: str) -> PendingApproval | None:
        """Record a person's decision on the approval ``token`` names; ``None`` if it decides nothing."""
        with self._lock:
            pending = self._find_locked(token)
            if pending is None:
                return None
            pending.decision = "approved" if approve else "declined"
            pending.decided_by, pending.how = decided_by, how
        pending._decided.set()
        return pending

    def pending(self) -> list[PendingApproval]:
        """The approvals still waiting for a decision (for a queue)."""
        with self._lock:
            self._drop_expired()
            return [pending for pending in self._pending.values() if pending.decision is None]

    async def wait(self, pending: PendingApproval, seconds: float) -> Decision:
        """The decision on ``pending`` within ``seconds`` (and its expiry); the approval is then closed.

        Closing it makes it single-use: its token decides nothing afterwards, whatever the outcome.
        """
        wait_for = max(0.0, min(seconds, pending.expires_at - self._clock()))
        with anyio.move_on_after(wait_for):
            await pending._decided.wait()
        self.close(pending)
        return pending.decision or "timeout"

    def close(self, pending: PendingApproval) -> None:
        with self._lock:
            if self._pending.get(pending.id) is pending:
                del self._pending[pending.id]

    def _find_locked(self, token: str) -> PendingApproval | None:
        pending = self._pending.get(token.partition(".")[0])
        if pending is None or pending.decision is not None or pending.expires_at <= self._clock():
            return None
        return pending if self._signature_holds(token, pending) else None

    def _signature_holds(self, token: str, pending: PendingApproval) -> bool:
        signature = token.partition(".")[2]
        return hmac.compare_digest(signature.encode("ascii", "replace"), self._sign(pending).encode("ascii"))

    def _sign(self, pending: PendingApproval) -> str:
        message = "\n".join((pending.id, pending.tool, pending.digest, repr(pending.expires_at))).encode()
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    def _drop_expired(self) -> None:
        now = self._clock()
        for approval_id in [key for key, value in self._pending.items() if value.expires_at <= now]:
            del self._pending[approval_id]


@dataclass(frozen=True)
class ApprovalPolicy:
    """What the operator set: the default policy, the destructive rule, where the page is, the wait."""

    default: str = "client"
    destructive_person: bool = False
    page_base: str = ""
    """The server's public base URL (``public_url``, else ``http://HOST:PORT``)."""
    wait: float = 300.0
    """Seconds a call waits for the person's decision (``input_timeout``)."""
    audit_arguments: bool = False

    def for_module(self, annotations: Any) -> str:
        return module_policy(self.default, destructive_person=self.destructive_person, annotations=annotations)

    def page_url(self, token: str) -> str:
        return f"{self.page_base.rstrip('/')}{APPROVALS_PATH}/{token}"
