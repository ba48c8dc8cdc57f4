"""Approvals a person decides, kept in the workers' store: any worker's page decides any call's.

The in-process ``ApprovalDesk`` keeps its pending approvals in a dict and wakes the waiting call
with an event; with several workers the page's request may land on another process. Here each
pending approval is a row of ``person_approvals`` and the tokens are signed with a secret every
worker shares (made by the first, kept in the store): any worker finds, renders and decides
one, and the waiting call (in its own worker) reads its row every ``POLL_SECONDS`` until a
decision, its wait or its expiry. Each change is one write transaction, so the caps (overall
and per caller, counted in SQL), single use (a decision only on an undecided row; the row is
deleted once the call has its answer) and the one-claim rule hold across the workers. A store
that fails decides nothing: the call is refused or times out (fail closed).
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import anyio

from apcore_mcp.calls.person_approval import (
    MAX_PENDING,
    MAX_PENDING_PER_CALLER,
    ApprovalDesk,
    Decision,
    PendingApproval,
)
from apcore_mcp.replicas.machine.store import MachineStore

logger = logging.getLogger(__name__)

_BY_ID = (
    "SELECT id, tool, digest, asked_by, arguments, expires_at, claimed, decision, decided_by, how"
    " FROM person_approvals WHERE id = ?"
)
_WAITING = (
    "SELECT id, tool, digest, asked_by, arguments, expires_at, claimed, decision, decided_by, how"
    " FROM person_approvals WHERE decision IS NULL AND expires_at > ? ORDER BY rowid"
)

POLL_SECONDS = 0.2
"""How often a waiting call reads its row (a read costs microseconds; a person takes seconds)."""


class MachineApprovalDesk(ApprovalDesk):
    """``ApprovalDesk`` whose pending approvals are rows of the workers' store."""

    def __init__(
        self,
        store: MachineStore,
        *,
        secret: bytes,
        max_pending: int = MAX_PENDING,
        max_per_caller: int = MAX_PENDING_PER_CALLER,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(secret=secret, max_pending=max_pending, max_per_caller=max_per_caller, clock=clock)
        self.store = store

    def open(self, *, tool: str, digest: str, asked_by: str, arguments: str, ttl: float) -> PendingApproval | None:
        pending = PendingApproval(
            id=secrets.token_urlsafe(16), tool=tool, digest=digest, asked_by=asked_by, arguments=arguments,
            expires_at=self._clock() + ttl,
        )  # fmt: skip
        try:
            with self.store.writing() as db:
                db.execute("DELETE FROM person_approvals WHERE expires_at <= ?", (self._clock(),))
                if self.store.one("SELECT count(*) FROM person_approvals") >= self.max_pending:
                    return None
                mine = self.store.one("SELECT count(*) FROM person_approvals WHERE asked_by = ?", (asked_by,))
                if mine >= self.max_per_caller:
                    return None
                db.execute(
                    "INSERT INTO person_approvals (id, tool, digest, asked_by, arguments, expires_at, claimed,"
                    " decision, decided_by, how) VALUES (?, ?, ?, ?, ?, ?, 1, NULL, '', '')",
                    (pending.id, tool, digest, asked_by, arguments, pending.expires_at),
                )
        except sqlite3.Error as exc:
            logger.error("A person approval was refused: the workers' store failed: %s", exc)
            return None
        return pending

    def claim(self, approval_id: str) -> PendingApproval | None:
        try:
            with self.store.writing() as db:
                claimed = db.execute(
                    "UPDATE person_approvals SET claimed = 1 WHERE id = ? AND claimed = 0 AND expires_at > ?",
                    (approval_id, self._clock()),
                ).rowcount
                return self._row(approval_id) if claimed == 1 else None
        except sqlite3.Error as exc:
            logger.error("A person approval could not be resumed: the workers' store failed: %s", exc)
            return None

    def release(self, pending: PendingApproval) -> None:
        pending.claimed = False
        self._quietly("UPDATE person_approvals SET claimed = 0 WHERE id = ?", (pending.id,))

    def find(self, token: str) -> PendingApproval | None:
        try:
            return self._find_locked(token)
        except sqlite3.Error as exc:
            logger.error("An approval page could not be read: the workers' store failed: %s", exc)
            return None

    def decide(self, token: str, *, approve: bool, decided_by: str, how: str) -> PendingApproval | None:
        decision: Decision = "approved" if approve else "declined"
        try:
            with self.store.writing() as db:
                pending = self._find_locked(token)
                if pending is None:
                    return None
                db.execute(
                    "UPDATE person_approvals SET decision = ?, decided_by = ?, how = ?"
                    " WHERE id = ? AND decision IS NULL",
                    (decision, decided_by, how, pending.id),
                )
        except sqlite3.Error as exc:
            logger.error("A person's decision was not recorded: the workers' store failed: %s", exc)
            return None
        pending.decision, pending.decided_by, pending.how = decision, decided_by, how
        return pending

    def pending(self) -> list[PendingApproval]:
        try:
            rows = self.store.connection.execute(
                _WAITING,
                (self._clock(),),
            ).fetchall()
        except sqlite3.Error as exc:
            logger.error("The approval queue could not be read: the workers' store failed: %s", exc)
            return []
        return [_pending_of(row) for row in rows]

    async def wait(self, pending: PendingApproval, seconds: float) -> Decision:
        """The decision on ``pending`` within ``seconds`` (and its expiry), read from its row; then closed."""
        deadline = time.monotonic() + max(0.0, min(seconds, pending.expires_at - self._clock()))
        try:
            # The decision is taken in another process: no in-process event can carry it, the row does.
            while (row := self._row(pending.id)) is not None and row.decision is None and time.monotonic() < deadline:  # noqa: ASYNC110
                await anyio.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        except sqlite3.Error as exc:
            logger.error("A person approval's decision could not be read: the workers' store failed: %s", exc)
            row = None
        finally:
            self.close(pending)
        if row is not None and row.decision is not None:
            pending.decision, pending.decided_by, pending.how = row.decision, row.decided_by, row.how
        return pending.decision or "timeout"

    def close(self, pending: PendingApproval) -> None:
        self._quietly("DELETE FROM person_approvals WHERE id = ?", (pending.id,))

    def _find_locked(self, token: str) -> PendingApproval | None:
        approval_id, _, _signature = token.partition(".")
        pending = self._row(approval_id)
        if pending is None or pending.decision is not None or pending.expires_at <= self._clock():
            return None
        return pending if self._signature_holds(token, pending) else None

    def _row(self, approval_id: str) -> PendingApproval | None:
        row = self.store.connection.execute(_BY_ID, (approval_id,)).fetchone()
        return None if row is None else _pending_of(row)

    def _quietly(self, sql: str, parameters: tuple[Any, ...]) -> None:
        try:
            with self.store.writing() as db:
                db.execute(sql, parameters)
        except sqlite3.Error as exc:  # the row then expires with its approval
            logger.error("A person approval was not updated: the workers' store failed: %s", exc)


def _pending_of(row: tuple[Any, ...]) -> PendingApproval:
    approval_id, tool, digest, asked_by, arguments, expires_at, claimed, decision, decided_by, how = row
    return PendingApproval(
        id=approval_id, tool=tool, digest=digest, asked_by=asked_by, arguments=arguments,
        expires_at=expires_at, claimed=bool(claimed), decision=decision, decided_by=decided_by, how=how,
    )  # fmt: skip
