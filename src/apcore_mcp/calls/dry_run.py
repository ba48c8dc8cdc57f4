"""A dry run: would this call of mine pass? Checked without running the module.

A caller asks for it on its own ``tools/call`` with ``_meta: {"apcore/dryRun": true}`` (any
edge that builds a ``CallContext`` from an MCP request). The router answers it after the same
scope check a real call passes (``Authorization.check``: a tool hidden from the caller dry-runs
as not found, exactly as it calls), then asks apcore's ``Executor.validate`` with the caller's
own identity: the module id, the call chain, the ACL and the input schema, and whether approval
would be needed. Only apcore's pure steps run (approval, middleware and ``execute`` are
skipped), and no rate-limit token or concurrency slot is taken.

The answer is a tool result with ``isError: true`` whatever the verdict: it is not the tool's
output, and neither a model nor a client validating ``structuredContent`` against the tool's
``outputSchema`` may take it for one. Its text says the verdict in words; its
``_meta["apcore/dryRun"]`` says ``valid``, ``requiresApproval`` and each check by name. A
failed check carries the message a real call would answer (the words of ``calls/errors.py``),
never apcore's own error text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from apcore import Context, Executor
from apcore.errors import ACLDeniedError, ModuleError, SchemaValidationError

from apcore_mcp._apcore import executor_preflight
from apcore_mcp.calls.errors import to_safe_error
from apcore_mcp.tools.records import ToolRecord

DRY_RUN_META = "apcore/dryRun"
"""The ``_meta`` key of a ``tools/call`` that asks for a dry run (its value must be ``true``)."""


def wants_dry_run(meta: Mapping[str, Any]) -> bool:
    """Whether a call's ``_meta`` asks for a dry run (only the JSON ``true`` does)."""
    return meta.get(DRY_RUN_META) is True


async def dry_run_result(
    executor: object, record: ToolRecord, arguments: dict[str, Any], context: Context
) -> dict[str, Any]:
    """The wire ``CallToolResult`` of a dry run of ``record`` with ``arguments`` for ``context``'s caller.

    ``isError`` is always true: the module did not run, so this is not its result.
    """
    if not isinstance(executor, Executor):
        return _result({"dryRun": True, "valid": False, "error": "Dry run is not available for this server"})
    preflight = await executor_preflight(executor, record.name, arguments, context)
    checks = [_check(check, record, arguments) for check in preflight.checks]
    body = {
        "dryRun": True,
        "valid": bool(preflight.valid),
        "requiresApproval": bool(preflight.requires_approval),
        "checks": checks,
    }
    return _result(body)


def _check(check: Any, record: ToolRecord, arguments: dict[str, Any]) -> dict[str, Any]:
    """One of apcore's preflight checks, its failure in the words a real call would answer."""
    shown: dict[str, Any] = {"check": str(check.check), "passed": bool(check.passed)}
    if not check.passed:
        shown["error"] = _message(check.error or {}, record, arguments)
    return shown


def _message(error: Mapping[str, Any], record: ToolRecord, arguments: dict[str, Any]) -> str:
    code = str(error.get("code", ""))
    details = error.get("details") if isinstance(error.get("details"), Mapping) else {}
    exc: ModuleError
    if code == "SCHEMA_VALIDATION_ERROR":
        errors = details.get("errors") if isinstance(details, Mapping) else None
        exc = SchemaValidationError("Input validation failed", errors=list(errors or []))
    elif code == "ACL_DENIED":
        exc = ACLDeniedError(None, record.name)
    else:  # apcore's message may hold module text: the code only, as calls/errors.py answers it
        exc = ModuleError(code=code or "UNKNOWN", message="")
    return to_safe_error(exc, arguments, record.input_schema).message


def _result(body: dict[str, Any]) -> dict[str, Any]:
    verdict = "the call would pass" if body["valid"] else "the call would be refused"
    text = f"Dry run, the module was not run: {verdict}. " + json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "_meta": {DRY_RUN_META: body}, "isError": True}
