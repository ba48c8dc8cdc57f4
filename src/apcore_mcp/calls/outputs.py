"""Checking a module's output against its output contract, Python values or their JSON form.

Inputs reach a module as JSON, so its author naturally returns JSON values too: ``"celsius"``
for an enum field, ``"2026-11-28"`` for a date. apcore checks outputs in strict Python mode,
which wants ``Unit.CELSIUS`` and ``date(2026, 11, 28)`` and refuses the plain values.
``validate_output`` accepts an output when either form validates: apcore's strict Python check
first (nothing changes for an output it accepts, and it costs no encoding), then the output's
JSON form in strict JSON mode, the way a call's arguments are checked. An output neither accepts
raises the JSON-mode errors, the ones that describe what a client would be sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
from apcore.errors import SchemaValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from apcore_mcp._apcore import convert_validation_errors

_SURROGATES = re.compile("[\ud800-\udfff]")
_NAMELESS = frozenset({"missing", "extra_forbidden"})
"""pydantic error types whose apcore ``path`` is the parent object's, without the field's own name."""


def validate_output(model: Any, output: object) -> None:
    """Accept ``output`` if ``model`` validates it strictly as Python values or in its JSON form.

    Raises:
        SchemaValidationError: neither form matches (``Output validation failed: ...``). Entries
            of a pydantic model are apcore's, plus ``field`` (the full path) where apcore's
            ``path`` leaves the field's name out; a JSON Schema contract's messages quote the
            offending value, so its entries keep only ``path`` and ``keyword``. Paths keep the
            names the schema declares and list indices; any other key is ``*``.
    """
    try:
        model.model_validate(output, strict=True)
        return
    except (pydantic.ValidationError, SchemaValidationError) as first:
        text = json_form(output)
        if text is None:  # no JSON form: the strict Python check's errors are the only ones there are
            raise _output_error(first, model) from first
    try:
        validate_json = getattr(model, "model_validate_json", None)
        if callable(validate_json):
            validate_json(text, strict=True)
        else:  # a dict schema (apcore's adapter): JSON data, not text
            model.model_validate(json.loads(text), strict=True)
    except (pydantic.ValidationError, SchemaValidationError) as exc:
        raise _output_error(exc, model) from exc


def json_form(output: object) -> str | None:
    """``output`` as JSON text (dates, enums, UUIDs and models as JSON has them), or None when it has none.

    NaN and infinities stay (pydantic's JSON reader takes them for floats, as Python validation
    did); lone surrogates become U+FFFD, as a client reads them.
    """
    try:
        plain = to_jsonable_python(output, by_alias=True, serialize_unknown=False)
        text = json.dumps(plain, ensure_ascii=False)
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        return None
    return _SURROGATES.sub("\ufffd", text)


def _output_error(error: pydantic.ValidationError | SchemaValidationError, model: Any) -> SchemaValidationError:
    # Paths name only what the schema declares: a free-form mapping's keys and a forbidden extra
    # key are the output's data (an account number, an address), so they become "*".
    words = _schema_words(model)
    if isinstance(error, pydantic.ValidationError):
        errors = convert_validation_errors(error)
        for entry, item in zip(errors, error.errors(), strict=True):
            location = item["loc"]
            if item["type"] in _NAMELESS:
                entry["path"] = _pointer(location[:-1], words)
                entry["field"] = _pointer(location, words)
            else:
                entry["path"] = _pointer(location, words)
    else:
        details = error.details.get("errors") if isinstance(error.details, dict) else None
        entries = details if isinstance(details, list) else []
        errors = [
            {"path": _masked_path(str(entry.get("path", "")), words), "keyword": entry.get("keyword", "")}
            for entry in entries
        ]
    return SchemaValidationError(message=f"Output validation failed: {errors}", errors=errors)


def _schema_words(model: Any) -> frozenset[str]:
    """The property and definition names ``model``'s JSON schema declares (empty when it has none)."""
    schema_of = getattr(model, "model_json_schema", None)
    try:
        schema = schema_of() if callable(schema_of) else {}
    except (pydantic.PydanticUserError, TypeError, ValueError):
        schema = {}
    words: set[str] = set()
    pending: list[object] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key in ("properties", "$defs", "definitions"):
                named = node.get(key)
                if isinstance(named, dict):
                    words.update(name for name in named if isinstance(name, str))
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return frozenset(words)


def _shown(part: int | str, words: frozenset[str]) -> str:
    return str(part) if isinstance(part, int) or part in words else "*"


def _pointer(location: tuple[int | str, ...], words: frozenset[str]) -> str:
    return "".join("/" + _shown(part, words).replace("~", "~0").replace("/", "~1") for part in location)


def _masked_path(path: str, words: frozenset[str]) -> str:
    """A JSON Schema contract's error path (a JSON pointer) with undeclared keys masked."""
    parts = [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]] if path else []
    location = tuple(int(part) if part.isdigit() else part for part in parts)
    return _pointer(location, words)
