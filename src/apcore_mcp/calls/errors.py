"""The one boundary where apcore errors become messages a client may see.

Clients get short, fixed messages (SRS section 7.5). Anything that could carry internal
detail (a raw exception, apcore's ``MODULE_EXECUTE_ERROR`` whose message embeds the original
exception text, a caller id, a call chain) is replaced by a generic message and logged. An output
that breaks its module's schema is named by field and constraint, never by the offending value.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from apcore.cancel import ExecutionCancelledError
from apcore.errors import (
    ACLDeniedError,
    ApprovalError,
    ApprovalPendingError,
    ApprovalTimeoutError,
    CallDepthExceededError,
    CallFrequencyExceededError,
    CircularCallError,
    InvalidInputError,
    ModuleError,
    ModuleNotFoundError,
    ModuleTimeoutError,
    SchemaValidationError,
)

logger = logging.getLogger(__name__)

ErrorKind = Literal[
    "not_found",
    "invalid_input",
    "access_denied",
    "unauthenticated",
    "approval",
    "timeout",
    "cancelled",
    "refused",
    "module",
    "output",
    "internal",
]

INTERNAL_ERROR = "Internal error occurred"
_UNEXPECTED_CODES = frozenset({"MODULE_EXECUTE_ERROR"})


@dataclass(frozen=True, slots=True)
class SafeError:
    """What a client is told about a failed call: a category and a message safe to show."""

    kind: ErrorKind
    message: str
    meta: dict[str, Any] | None = None
    """The tool error's ``_meta`` (a sign-in challenge: ``calls/signin.py``)."""


def module_not_found(name: str) -> SafeError:
    """The answer to a tool that is not there for the caller: absent, or hidden from it (``auth_filter_tools``)."""
    return SafeError("not_found", f"Module not found: {name}")


def to_safe_error(
    error: BaseException, arguments: dict[str, Any] | None = None, input_schema: dict[str, Any] | None = None
) -> SafeError:
    """Map any exception raised by a call to the message a client may see.

    ``arguments`` and ``input_schema`` let a validation error name a missing required field,
    which apcore reports with the parent's path only.
    """
    if isinstance(error, ModuleNotFoundError):
        return module_not_found(str(_detail(error, "module_id", "")))
    if isinstance(error, SchemaValidationError):
        if is_output_error(error):
            return SafeError("output", output_mismatch_message(error))
        return SafeError("invalid_input", format_validation_error(error, arguments, input_schema))
    if isinstance(error, ACLDeniedError):
        return SafeError("access_denied", "Access denied")
    if isinstance(error, ApprovalError):
        return SafeError("approval", approval_message(error))
    if isinstance(error, ExecutionCancelledError):
        return SafeError("cancelled", "Call cancelled")
    if isinstance(error, ModuleTimeoutError):
        return SafeError("timeout", f"Module timed out after {_detail(error, 'timeout_ms', 0)}ms")
    if isinstance(error, InvalidInputError):
        return SafeError("invalid_input", f"Invalid input: {error.message}")
    if isinstance(error, CallDepthExceededError):
        return SafeError("refused", "Call depth limit exceeded")
    if isinstance(error, CircularCallError):
        return SafeError("refused", "Circular call detected")
    if isinstance(error, CallFrequencyExceededError):
        return SafeError("refused", "Call frequency limit exceeded")
    if isinstance(error, ModuleError) and not is_unexpected(error):
        return SafeError("module", f"Module error: {error.code}")
    return SafeError("internal", INTERNAL_ERROR)


def approval_message(error: ApprovalError) -> str:
    """Why an approval-gated module did not run, and (in the handler's reason) what would allow it."""
    module_id = _detail(error, "module_id", "") or "the tool"
    reason = getattr(getattr(error, "result", None), "reason", None)
    if isinstance(error, ApprovalPendingError):
        reason = reason or "its approval is still pending"
    elif isinstance(error, ApprovalTimeoutError):
        reason = reason or "the confirmation was not answered in time"
    else:
        reason = reason or "it was not approved"
    return f"Not run: {module_id} requires approval: {str(reason).rstrip('.')}."


def is_unexpected(error: BaseException) -> bool:
    """True for failures that are bugs rather than refusals: these are logged with a traceback."""
    return not isinstance(error, ModuleError) or error.code in _UNEXPECTED_CODES


def is_output_error(error: BaseException) -> bool:
    """A module returned output that breaks its own schema: the server's fault, not the caller's."""
    return isinstance(error, SchemaValidationError) and str(error.message).startswith("Output validation")


_QUIET = (ACLDeniedError, ApprovalError, ExecutionCancelledError, ModuleNotFoundError)


def log_call_error(tool_name: str, error: BaseException) -> None:
    """Log a failed call server-side with everything the client was not told.

    A server fault is an ERROR with its traceback; a caller's mistake or a refusal is not the
    server failing: INFO (refusals, cancellations) or WARNING (bad input, timeouts), no traceback.
    A module's output that breaks its schema is a WARNING too, with the client's message (field
    and constraint): the offending value may be sensitive, and the module's author reproduces it.
    """
    message = getattr(error, "message", None) or str(error)
    if is_output_error(error):
        message = output_mismatch_message(error)
    text = "Tool call error: %s - %s: %s"
    if is_unexpected(error):
        logger.error(text, tool_name, type(error).__name__, message, exc_info=error)
    elif isinstance(error, _QUIET):
        logger.info(text, tool_name, type(error).__name__, message)
    else:
        logger.warning(text, tool_name, type(error).__name__, message)


def _detail(error: ModuleError, key: str, default: object) -> object:
    details = error.details if isinstance(error.details, dict) else {}
    return details.get(key, default)


# -- validation errors -----------------------------------------------------------------------

OUTPUT_MISMATCH = "The module's output does not match its schema"
_SHOWN_OUTPUT_ERRORS = 10
_MAX_PART = 200
_CONSTRAINT_KEYWORDS = frozenset(
    {
        "required",
        "enum",
        "minimum",
        "exclusiveMinimum",
        "maximum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "multipleOf",
        "additionalProperties",
    }
)
"""Keywords whose pydantic message is made of the schema's constraint alone (``Input should be 'a' or 'b'``)."""


def output_mismatch_message(error: SchemaValidationError) -> str:
    """``The module's output does not match its schema: field 'unit': Input should be ...`` (bounded).

    Each field is named with its constraint, never its value: a ``type`` message is cut before
    the parser's account of the value (``Input should be a valid date in the format YYYY-MM-DD``),
    and a message that may quote it (a custom validator's, a JSON Schema contract's) is replaced
    by the keyword.
    """
    entries = _detail(error, "errors", None)
    if not isinstance(entries, list) or not entries:
        return OUTPUT_MISMATCH
    parts = [_output_problem(entry) for entry in entries[:_SHOWN_OUTPUT_ERRORS] if isinstance(entry, dict)]
    more = len(entries) - _SHOWN_OUTPUT_ERRORS
    tail = f"; and {more} more" if more > 0 else ""
    return f"{OUTPUT_MISMATCH}: " + "; ".join(parts) + tail


def _output_problem(entry: dict[str, Any]) -> str:
    parts = _path_parts(entry.get("field", entry.get("path", "")))
    name = ".".join(parts) if parts else "(root)"
    keyword = str(entry.get("keyword") or "")
    message = str(entry.get("message") or "")
    if keyword in _CONSTRAINT_KEYWORDS and message:
        constraint = message
    elif keyword == "type" and message.startswith("Input should be"):
        constraint = message.split(", ", 1)[0]
    else:
        constraint = f"does not satisfy the schema ({keyword or 'invalid'})"
    return f"field {_clip(name)!r}: {_clip(constraint)}"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_PART else text[: _MAX_PART - 3] + "..."


def format_validation_error(
    error: SchemaValidationError, arguments: dict[str, Any] | None = None, input_schema: dict[str, Any] | None = None
) -> str:
    """``Input validation failed:`` then one ``- field: message (code)`` line per problem."""
    entries = _detail(error, "errors", None)
    if not isinstance(entries, list) or not entries:
        return "Input validation failed"
    fields = _field_names(entries, arguments or {}, input_schema or {})
    lines = [
        f"- {name}: {entry.get('message', 'invalid')} ({entry.get('code') or entry.get('keyword') or 'invalid'})"
        for name, entry in zip(fields, entries, strict=True)
    ]
    return "Input validation failed:\n" + "\n".join(lines)


def _field_names(entries: list[dict[str, Any]], arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """A dotted field name per error entry, recovering the names of missing required fields."""
    claimed: dict[str, list[str]] = {}
    names = []
    for entry in entries:
        parts = _path_parts(entry.get("field", entry.get("path", "")))
        is_required = (entry.get("keyword") or entry.get("code")) in ("required", "missing")
        if is_required:
            key = "/".join(parts)
            if key not in claimed:
                claimed[key] = _missing_required(parts, arguments, schema)
            if claimed[key]:
                parts = [*parts, claimed[key].pop(0)]
        names.append(".".join(parts) if parts else "(root)")
    return names


def _path_parts(path: object) -> list[str]:
    if isinstance(path, (list, tuple)):
        return [str(part) for part in path]
    text = str(path or "")
    separator = "/" if text.startswith("/") or "/" in text else "."
    return [part for part in text.split(separator) if part]


def _missing_required(parts: list[str], arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The required property names absent from the object found at ``parts`` in the arguments."""
    value: object = arguments
    node = _concrete(schema, dict)
    for part in parts:
        if isinstance(value, dict):
            value = value.get(part)
            node = _concrete((node.get("properties") or {}).get(part, {}), type(value))
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
            node = _concrete(node.get("items", {}), type(value))
        else:
            return []
    if not isinstance(value, dict):
        return []
    return [name for name in node.get("required", []) if name not in value]


def _concrete(node: object, value_type: type) -> dict[str, Any]:
    """The schema that applies to a value: for ``Model | None`` (``anyOf``), the object branch."""
    if not isinstance(node, dict):
        return {}
    wanted = "object" if value_type is dict else "array" if value_type is list else None
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(key) or ():
            if isinstance(branch, dict) and (
                branch.get("type") == wanted or (wanted == "object" and "properties" in branch)
            ):
                return branch
    return node
