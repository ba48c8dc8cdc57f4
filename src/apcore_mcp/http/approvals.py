"""The approval page: ``GET /approvals/<token>`` shows a pending call, ``POST`` decides it.

``GET /approvals`` lists the approvals waiting, for the explorer's queue, to the same people.

A ``person`` approval (``calls/person_approval.py``) sends the client a link to this page. The
page shows the tool, its arguments (redacted) and who asked, with Approve and Decline buttons.
Only a person allowed to approve reaches it: with auth on, a token holding
``auth_approver_scope`` (401 without a token from the auth layer, 403 without the scope); with
auth off, loopback clients only (as ``/admin/tools``). The form carries a field derived from
the desk's secret and the link (a cross-site page knows neither), and a browser's
``Sec-Fetch-Site: cross-site`` is refused. The page is never cached, never framed, sends no
referrer to another origin (the link is the capability) and runs no script (a strict CSP). A link that is forged,
altered, expired or already decided answers the same 404, saying nothing of which.
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs

from apcore import Executor
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from apcore_mcp.calls.approval import mcp_approval_handler
from apcore_mcp.calls.person_approval import APPROVALS_PATH, ApprovalDesk, PendingApproval
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.http.admin import operator_refusal

MAX_TOKEN_CHARS = 128
MAX_FORM_BYTES = 1024
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",  # no-referrer would make a browser send `Origin: null` with the form
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}
_NO_STORE = {"Cache-Control": "no-store"}
NOT_VALID = "This approval link is not valid: it is unknown, expired or already decided."


def approval_routes(executor: Executor, *, approver_scope: str | None) -> list[BaseRoute]:
    """The page of the desk of ``executor``'s approval handler (none if it is not ours);
    ``approver_scope`` ``None``: auth off."""
    handler = mcp_approval_handler(executor)
    if handler is None:
        return []
    handler.desk.page_served = True

    async def page(request: Request) -> Response:
        refused = operator_refusal(request, approver_scope)
        if refused is not None:
            return refused
        desk = handler.desk  # read per request: several workers swap in their shared desk while served
        token = request.path_params["token"]
        if request.method == "POST":
            return await _decide(request, desk, token, approver_scope)
        pending = desk.find(token) if len(token) <= MAX_TOKEN_CHARS else None
        if pending is None:
            return _page(NOT_VALID, status=404)
        return _page(_form(pending, desk.form_key(token)))

    async def queue(request: Request) -> Response:
        refused = operator_refusal(request, approver_scope)
        if refused is not None:
            return refused
        root, desk = request.scope.get("root_path", ""), handler.desk
        return JSONResponse({"pending": [_entry(desk, pending, root) for pending in desk.pending()]}, headers=_NO_STORE)

    return [
        Route(APPROVALS_PATH, queue, methods=["GET"]),
        Route(f"{APPROVALS_PATH}/{{token}}", page, methods=["GET", "POST"]),
    ]


def _entry(desk: ApprovalDesk, pending: PendingApproval, root: str) -> dict[str, object]:
    """One waiting approval as the explorer's queue shows it, with what deciding it takes."""
    token = desk.token(pending)
    return {
        "tool": pending.tool,
        "asked_by": pending.asked_by,
        "arguments": pending.arguments,
        "arguments_sha256": pending.digest,
        "path": f"{root}{APPROVALS_PATH}/{token}",
        "form_key": desk.form_key(token),
    }


async def _decide(request: Request, desk: ApprovalDesk, token: str, approver_scope: str | None) -> Response:
    if request.headers.get("sec-fetch-site") == "cross-site":
        return _page("A decision must come from this server's own page.", status=403)
    body = await request.body()
    form = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
    choice, key = form.get("decision", [""])[0], form.get("form_key", [""])[0]
    if len(token) > MAX_TOKEN_CHARS or choice not in ("approve", "decline") or not desk.form_key_holds(token, key):
        return _page(NOT_VALID, status=404)
    principal = principal_of(request.scope)
    who = principal.identity.id if principal is not None else "loopback operator"
    how = "approval page" if approver_scope is None else f"approval page (scope {approver_scope})"
    pending = desk.decide(token, approve=choice == "approve", decided_by=who, how=how)
    if pending is None:
        return _page(NOT_VALID, status=404)
    return _page(f"Recorded: {choice} for {html.escape(pending.tool)}. You may close this page.")


def _form(pending: PendingApproval, form_key: str) -> str:
    return (
        f"<h1>Approve {html.escape(pending.tool)}?</h1>"
        f"<p>Asked by: {html.escape(pending.asked_by)}</p>"
        f"<p>Arguments (secrets masked):</p><pre>{html.escape(pending.arguments)}</pre>"
        f"<p>Arguments SHA-256: <code>{pending.digest}</code></p>"
        '<form method="post">'
        f'<input type="hidden" name="form_key" value="{html.escape(form_key)}">'
        '<button type="submit" name="decision" value="approve">Approve</button> '
        '<button type="submit" name="decision" value="decline">Decline</button>'
        "</form>"
    )


def _page(body: str, *, status: int = 200) -> Response:
    document = f'<!doctype html><html lang="en"><meta charset="utf-8"><title>Approval</title><body>{body}</body></html>'
    return HTMLResponse(document, status_code=status, headers=PAGE_HEADERS)
