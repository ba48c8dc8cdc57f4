"""FR-ERROR / SRS 7.5: the messages a client sees for every kind of failed call."""

from __future__ import annotations

from typing import Any

import pytest
from apcore import Executor, Registry
from apcore.errors import (
    ACLDeniedError,
    CallDepthExceededError,
    CallFrequencyExceededError,
    CircularCallError,
    InvalidInputError,
    ModuleError,
    ModuleExecuteError,
    ModuleNotFoundError,
    ModuleTimeoutError,
    SchemaValidationError,
)
from pydantic import BaseModel

from apcore_mcp.calls.errors import INTERNAL_ERROR, to_safe_error
from apcore_mcp.tools.records import build_record

from tests._support.modules import module_of

# -- fixed messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (ModuleNotFoundError("image.resize"), "not_found", "Module not found: image.resize"),
        (ModuleNotFoundError("comfyui.workflow.execute"), "not_found", "Module not found: comfyui.workflow.execute"),
        (ModuleNotFoundError(""), "not_found", "Module not found: "),
        (ACLDeniedError("mcp_client_123", "admin.delete_all"), "access_denied", "Access denied"),
        (ACLDeniedError(None, "admin.delete_all"), "access_denied", "Access denied"),
        (ModuleTimeoutError("slow.module", 30000), "timeout", "Module timed out after 30000ms"),
        (ModuleTimeoutError("slow.module", 0), "timeout", "Module timed out after 0ms"),
        (ModuleTimeoutError("slow.module", 60000), "timeout", "Module timed out after 60000ms"),
        (
            InvalidInputError("module_id must be a non-empty string"),
            "invalid_input",
            "Invalid input: module_id must be a non-empty string",
        ),
        (
            CallDepthExceededError(33, 32, ["caller.secret_a", "caller.secret_b"]),
            "refused",
            "Call depth limit exceeded",
        ),
        (CircularCallError("a.module", ["a.module", "b.module", "a.module"]), "refused", "Circular call detected"),
        (
            CallFrequencyExceededError("spammy.module", 4, 3, ["x.chain", "spammy.module"]),
            "refused",
            "Call frequency limit exceeded",
        ),
        (ModuleError(code="CONFIG_INVALID", message="db password=hunter2"), "module", "Module error: CONFIG_INVALID"),
        (
            ModuleExecuteError("worker", "Module 'worker' raised RuntimeError: secret /etc/passwd"),
            "internal",
            "Internal error occurred",
        ),
        (RuntimeError("disk full at /var/secret"), "internal", "Internal error occurred"),
        (TypeError("bad operand"), "internal", "Internal error occurred"),
        (OSError("no such file /root/.ssh/id_rsa"), "internal", "Internal error occurred"),
        (KeyError("missing_key"), "internal", "Internal error occurred"),
    ],
)
def test_safe_messages(error: BaseException, kind: str, message: str) -> None:
    safe = to_safe_error(error)
    assert safe.message == message
    assert safe.kind == kind


def test_internal_error_constant() -> None:
    assert INTERNAL_ERROR == "Internal error occurred"


@pytest.mark.parametrize(
    ("error", "secrets"),
    [
        (ACLDeniedError("mcp_client_123", "admin.delete_all"), ["mcp_client_123", "admin.delete_all"]),
        (CallDepthExceededError(33, 32, ["chain.alpha", "chain.beta"]), ["chain.alpha", "chain.beta", "33"]),
        (CircularCallError("loop.mod", ["loop.mod", "other.mod", "loop.mod"]), ["loop.mod", "other.mod"]),
        (CallFrequencyExceededError("spam.mod", 4, 3, ["head.mod", "spam.mod"]), ["spam.mod", "head.mod"]),
        (ModuleExecuteError("worker", "Module 'worker' raised RuntimeError: token=abc123"), ["abc123", "worker"]),
        (ModuleError(code="CONFIG_INVALID", message="db password=hunter2"), ["hunter2"]),
        (RuntimeError("token=abc123"), ["abc123", "RuntimeError"]),
        (ValueError("Traceback /srv/app.py line 3"), ["Traceback", "/srv/app.py", "ValueError"]),
    ],
)
def test_sensitive_details_never_reach_the_message(error: BaseException, secrets: list[str]) -> None:
    message = to_safe_error(error).message
    for secret in secrets:
        assert secret not in message


def test_output_validation_error_names_the_field_and_its_constraint() -> None:
    error = SchemaValidationError(
        "Output validation failed",
        errors=[
            {"path": "/ok", "keyword": "type", "message": "Input should be a valid UUID, found `s` at 1"},
            {"path": "/n", "keyword": "format", "message": "Value error, secret-value is not allowed"},
        ],
    )
    safe = to_safe_error(error)
    assert safe.kind == "output"
    assert safe.message == (
        "The module's output does not match its schema: field 'ok': Input should be a valid UUID; "
        "field 'n': does not satisfy the schema (format)"
    )


# -- validation formatting ----------------------------------------------------------------------------


def validation(*entries: dict[str, Any]) -> SchemaValidationError:
    return SchemaValidationError("Input validation failed", errors=list(entries))


def test_validation_one_line_per_entry() -> None:
    error = validation(
        {"path": "/width", "keyword": "type", "message": "Input should be a valid integer"},
        {"path": "/name", "keyword": "string_too_short", "message": "String should have at least 1 character"},
    )
    safe = to_safe_error(error)
    assert safe.kind == "invalid_input"
    assert safe.message == (
        "Input validation failed:\n"
        "- width: Input should be a valid integer (type)\n"
        "- name: String should have at least 1 character (string_too_short)"
    )


def test_validation_spec_example_with_field_and_code_keys() -> None:
    error = validation({"field": "width", "code": "int_type", "message": "Input should be a valid integer"})
    assert (
        to_safe_error(error).message == "Input validation failed:\n- width: Input should be a valid integer (int_type)"
    )


def test_validation_dotted_field_is_preserved() -> None:
    error = validation({"field": "parameters.width", "code": "int_type", "message": "Input should be a valid integer"})
    assert to_safe_error(error).message == (
        "Input validation failed:\n- parameters.width: Input should be a valid integer (int_type)"
    )


def test_validation_slash_path_becomes_dotted() -> None:
    error = validation({"path": "/inner/x", "keyword": "type", "message": "Input should be a valid integer"})
    assert to_safe_error(error).message == "Input validation failed:\n- inner.x: Input should be a valid integer (type)"


def test_validation_empty_errors_list() -> None:
    assert to_safe_error(validation()).message == "Input validation failed"
    assert to_safe_error(SchemaValidationError("Input validation failed")).message == "Input validation failed"


SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "string"},
        "c": {"type": "string"},
        "inner": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    },
    "required": ["a", "b", "inner"],
}
REQUIRED = {"path": "", "keyword": "required", "message": "Field required"}


def test_missing_required_field_is_named_from_arguments_and_schema() -> None:
    arguments = {"b": "x", "inner": {"x": 1}}
    assert to_safe_error(validation(REQUIRED), arguments, SCHEMA).message == (
        "Input validation failed:\n- a: Field required (required)"
    )


def test_two_missing_fields_are_both_named() -> None:
    arguments = {"inner": {"x": 1}, "c": "present"}
    message = to_safe_error(validation(REQUIRED, REQUIRED), arguments, SCHEMA).message
    assert message == "Input validation failed:\n- a: Field required (required)\n- b: Field required (required)"


def test_nested_missing_field_is_named_with_its_parent() -> None:
    error = validation({"path": "/inner", "keyword": "required", "message": "Field required"})
    arguments = {"a": 1, "b": "x", "inner": {}}
    assert to_safe_error(error, arguments, SCHEMA).message == (
        "Input validation failed:\n- inner.x: Field required (required)"
    )


def test_missing_field_without_schema_is_labelled_root() -> None:
    assert (
        to_safe_error(validation(REQUIRED)).message == "Input validation failed:\n- (root): Field required (required)"
    )


# -- real validation errors from an apcore Executor ---------------------------------------------------


class Inner(BaseModel):
    x: int


class ShapeIn(BaseModel):
    a: int
    b: str
    inner: Inner
    items: list[Inner] = []


class MaybeIn(BaseModel):
    inner: Inner | None = None


class Out(BaseModel):
    ok: bool


def ok(**_: Any) -> dict[str, bool]:
    return {"ok": True}


def leak(**_: Any) -> dict[str, str]:
    return {"ok": "secret-value"}


def crash(**_: Any) -> dict[str, Any]:
    raise RuntimeError("token=abc123 at /srv/secret.py")


Shape = module_of(ok, input=ShapeIn, output=Out, description="validates its inputs")
Maybe = module_of(ok, input=MaybeIn, output=Out, description="optional nested model")
BadOutput = module_of(leak, input=MaybeIn, output=Out, description="returns output that breaks its own schema")
Raises = module_of(crash, input=MaybeIn, output=Out, description="raises a raw exception")


async def real_message(module: Any, arguments: dict[str, Any]) -> str:
    registry = Registry()
    registry.register("check.shape", module)
    descriptor = registry.get_definition("check.shape")
    assert descriptor is not None
    record = build_record(descriptor)
    with pytest.raises(SchemaValidationError) as caught:
        await Executor(registry).call_async("check.shape", arguments)
    return to_safe_error(caught.value, arguments, record.input_schema).message


async def test_real_missing_field_is_named() -> None:
    message = await real_message(Shape, {"b": "x", "inner": {"x": 1}})
    assert message == "Input validation failed:\n- a: Field required (required)"


async def test_real_two_missing_fields_are_named() -> None:
    message = await real_message(Shape, {"inner": {"x": 1}})
    assert message == "Input validation failed:\n- a: Field required (required)\n- b: Field required (required)"


async def test_real_nested_missing_field_is_named() -> None:
    message = await real_message(Shape, {"a": 1, "b": "x", "inner": {}})
    assert message == "Input validation failed:\n- inner.x: Field required (required)"


async def test_real_missing_field_inside_list_item_is_named() -> None:
    message = await real_message(Shape, {"a": 1, "b": "x", "inner": {"x": 1}, "items": [{"x": 1}, {}]})
    assert message == "Input validation failed:\n- items.1.x: Field required (required)"


async def test_real_type_errors_are_listed() -> None:
    message = await real_message(Shape, {"a": "1", "b": 2, "inner": {"x": 1}})
    assert message == (
        "Input validation failed:\n"
        "- a: Input should be a valid integer (type)\n"
        "- b: Input should be a valid string (type)"
    )


async def test_real_missing_field_inside_optional_model_is_named() -> None:
    message = await real_message(Maybe, {"inner": {}})
    assert message == "Input validation failed:\n- inner.x: Field required (required)"


async def real_failure(module: Any, raised: type[ModuleError], module_id: str = "fail.here") -> ModuleError:
    """The error apcore's own Executor raises calling ``module_id``; it must be a ``raised``."""
    registry = Registry()
    registry.register("fail.here", module)
    with pytest.raises(raised) as caught:
        await Executor(registry).call_async(module_id, {})
    return caught.value


async def test_real_output_validation_error_names_the_field_not_the_value() -> None:
    safe = to_safe_error(await real_failure(BadOutput, SchemaValidationError))  # apcore's own output step
    assert safe.message == "The module's output does not match its schema: field 'ok': Input should be a valid boolean"
    assert safe.kind == "output"


async def test_real_raw_exception_is_internal() -> None:
    error = await real_failure(Raises, ModuleExecuteError)
    assert isinstance(error, ModuleExecuteError)
    assert "abc123" in str(error)  # apcore embeds the original text...
    assert to_safe_error(error).message == "Internal error occurred"  # ...which never reaches the client


async def test_real_unknown_module() -> None:
    error = await real_failure(Raises, ModuleNotFoundError, "not.there")
    assert to_safe_error(error).message == "Module not found: not.there"
