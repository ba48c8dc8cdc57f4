"""Checking a call's arguments against its module's input contract, as apcore's Executor would.

``validate_strictly`` is the Executor's own rule (pydantic strict mode, through JSON when the
arguments are JSON); the fast pipeline's validation step uses it too. ``invalid_input`` runs it at
the edge, for the ``validate_inputs`` setting: before authorization's admission, approval, ACL,
middleware or the module, and answered with the message a client gets from the Executor.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
from apcore.errors import SchemaValidationError

from apcore_mcp._apcore import convert_validation_errors
from apcore_mcp.calls.errors import SafeError, to_safe_error


def validate_strictly(model: Any, inputs: dict[str, Any]) -> None:
    """Validate ``inputs`` with ``model`` strictly, through JSON when they are JSON (apcore's JSON-mode rule).

    Raises:
        pydantic.ValidationError: a pydantic model refused them.
        SchemaValidationError: a JSON Schema contract (``JsonSchemaModel``) refused them.
    """
    try:
        text = json.dumps(inputs)
    except (TypeError, ValueError):
        # Native callers may pass datetime/UUID/Enum values: strict Python-mode validation.
        model.model_validate(inputs, strict=True)
        return
    validate_json = getattr(model, "model_validate_json", None)
    if callable(validate_json):
        validate_json(text, strict=True)
    else:
        model.model_validate(inputs, strict=True)


def invalid_input(module: object, arguments: dict[str, Any], input_schema: dict[str, Any]) -> SafeError | None:
    """The client's error for ``arguments`` that ``module``'s input contract refuses, else ``None``.

    A module without a contract (no ``input_schema`` with ``model_validate``) is left to the Executor.
    """
    model = getattr(module, "input_schema", None)
    if model is None or not callable(getattr(model, "model_validate", None)):
        return None
    try:
        validate_strictly(model, arguments)
    except pydantic.ValidationError as exc:
        errors = convert_validation_errors(exc)
        error = SchemaValidationError(message=f"Input validation failed: {errors}", errors=errors)
        return to_safe_error(error, arguments, input_schema)
    except SchemaValidationError as exc:
        return to_safe_error(exc, arguments, input_schema)
    return None
