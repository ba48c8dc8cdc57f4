"""The audit record of an approval decision: one INFO line on the ``apcore_mcp.audit`` logger.

Every decision about an approval a person decides (approved, declined, timed out, refused)
is one record: who asked, which tool, the SHA-256 digest of the canonical arguments, who
decided, when and how. The arguments themselves are left out unless the operator asks for
them (``audit_arguments``), and then only redacted (``redacted_arguments``). The record is a
JSON object on one line, so a log shipper can index it; it is kept as long as the log is and, with
``audit_retention``, in the replicas' Redis (``replicas/audit.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from apcore.utils.redaction import redact_sensitive

from apcore_mcp._redaction import redact

audit_logger = logging.getLogger("apcore_mcp.audit")
MAX_AUDIT_ARGUMENTS_CHARS = 2000
"""Characters of redacted arguments a record (or the approval page) shows at most."""


class AuditStore(Protocol):
    """Where audit records are kept besides the log (the replicas' Redis, with ``audit_retention``)."""

    async def keep(self, record: str) -> None:
        """Keep one record (a JSON line); failing to keep it never changes the decision."""
        ...  # pragma: no cover - a Protocol


def argument_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the arguments in canonical JSON: sorted keys, no spaces, UTF-8."""
    canonical = json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def redacted_arguments(arguments: Mapping[str, Any]) -> str:
    """The arguments as a person may see them: secret-looking keys and values masked, then cut."""
    masked = redact_sensitive(dict(arguments), {})
    text = redact(json.dumps(masked, ensure_ascii=False, sort_keys=True, indent=1, default=str))
    if len(text) > MAX_AUDIT_ARGUMENTS_CHARS:
        return text[:MAX_AUDIT_ARGUMENTS_CHARS] + "... (truncated)"
    return text


def audit_decision(
    *,
    tool: str,
    digest: str,
    asked_by: str,
    decision: str,
    decided_by: str,
    how: str,
    arguments: str | None = None,
) -> str:
    """Log one decision and return its record; ``arguments`` (already redacted) only if the operator asks."""
    record: dict[str, Any] = {
        "event": "approval.decision",
        "tool": tool,
        "arguments_sha256": digest,
        "asked_by": asked_by,
        "decision": decision,
        "decided_by": decided_by,
        "how": how,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if arguments is not None:
        record["arguments"] = arguments
    line = json.dumps(record, ensure_ascii=False, sort_keys=True)
    audit_logger.info("%s", line)
    return line
