"""The fast pipeline behaves exactly as apcore's standard one.

Each case is called through a standard ``Executor`` and one with ``install_pipeline``, each over
its own registry, under four set-ups (nothing; ACL + middleware + approving handler; the same
with a denying handler; custom redaction rules). Results, errors (type, code, message, details),
the ``redacted_inputs`` / ``redacted_output`` captures and every middleware hook's record must
be identical. A first check makes sure the matrix really reaches each kind of outcome.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from apcore import Context, ModuleAnnotations
from apcore.observability.context_logger import RedactionConfig

from apcore_mcp._apcore import default_sensitive_keys, key_matches
from apcore_mcp.pipeline import close_pipeline
from apcore_mcp.pipeline.redaction import Redaction

from tests._support.pipeline import SETUPS, Outcome, Setup, describe_error, make_side, outcome

CARD = {"number": "4111-1111", "holder": "Ann"}
ACCOUNT = {"user": "ann", "password": "hunter2", "card": CARD, "cards": [CARD, CARD], "api_key": "k-1"}
SQUARE = {"name": "sq", "points": [{"x": 0, "y": 0}, {"x": 0, "y": 1}, {"x": 1, "y": 1}, {"x": 1, "y": 0}]}

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "sensitive nested and in lists": ("eq.login", ACCOUNT),
    "sensitive by key name in a free dict": ("eq.login", {**ACCOUNT, "notes": {"auth": "x", "Private-Key": "y"}}),
    "correlation key never redacted": ("eq.login", {**ACCOUNT, "notes": {"trace_id": "tok-abc"}}),
    "nested models": ("eq.measure", SQUARE),
    "extra keys ignored": ("eq.measure", {**SQUARE, "colour": "red", "password": "p"}),
    "missing field": ("eq.measure", {"name": "sq"}),
    "missing nested field": ("eq.measure", {"name": "sq", "points": [{"x": 1}]}),
    "wrong type": ("eq.measure", {"name": 3, "points": []}),
    "strict: no str to int": ("eq.measure", {"name": "sq", "points": [{"x": "1", "y": 2}]}),
    "strict: no int to str": ("eq.echo", {"text": 5}),
    "literal": ("eq.measure", {**SQUARE, "kind": "round"}),
    "bounds": ("eq.measure", {**SQUARE, "scale": 0}),
    "max length": ("eq.echo", {"text": "x" * 41}),
    "not JSON-able input": ("eq.echo", {"text": "hi", "blob": {1, 2}}),
    "native datetime": ("eq.stamp", {"at": datetime(2026, 1, 2, tzinfo=UTC)}),
    "datetime as text": ("eq.stamp", {"at": "2026-01-02T00:00:00+00:00"}),
    "datetime malformed": ("eq.stamp", {"at": "yesterday"}),
    "echo": ("eq.echo", {"text": "hello"}),
    "output validation failure": ("eq.bad_output", {"text": "hi"}),
    "no output schema": ("eq.no_output_schema", {"text": "hi"}),
    "no schemas": ("eq.no_schemas", {"a": 1, "password": "p"}),
    "module raises": ("eq.boom", {"text": "hi"}),
    "middleware recovers": ("eq.recover", {"text": "hi"}),
    "ACL denial": ("eq.denied", {"text": "hi"}),
    "approval": ("eq.purge", {"text": "hi"}),
    "approval token stripped": ("eq.purge", {"text": "hi", "_approval_token": "t-1"}),
    "async timeout": ("eq.slow_async", {}),
    "sync timeout": ("eq.slow_sync", {}),
    "unknown module": ("eq.missing", {}),
}


async def both(setup: Setup, module_id: str, inputs: dict[str, Any]) -> tuple[Outcome, Outcome]:
    standard, fast = make_side(setup, fast=False), make_side(setup, fast=True)
    try:
        return await outcome(standard, module_id, inputs), await outcome(fast, module_id, inputs)
    finally:
        close_pipeline(fast.executor)


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("case", list(CASES))
async def test_same_outcome(setup: Setup, case: str) -> None:
    module_id, inputs = CASES[case]
    standard, fast = await both(setup, module_id, inputs)
    assert fast.error == standard.error
    assert fast.result == standard.result
    assert fast.captures == standard.captures
    assert fast.log == standard.log


async def test_the_matrix_reaches_every_kind_of_outcome() -> None:
    """Guards against a matrix that compares nothing: each case lands where it is meant to."""
    codes = {case: (await both("governed", *CASES[case]))[1] for case in CASES}
    expected = {
        "missing field": "SCHEMA_VALIDATION_ERROR",
        "strict: no str to int": "SCHEMA_VALIDATION_ERROR",
        "output validation failure": "SCHEMA_VALIDATION_ERROR",
        "module raises": "MODULE_EXECUTE_ERROR",
        "ACL denial": "ACL_DENIED",
        "async timeout": "MODULE_TIMEOUT",
        "sync timeout": "MODULE_TIMEOUT",
        "unknown module": "MODULE_NOT_FOUND",
    }
    for case, code in expected.items():
        error = codes[case].error
        assert error is not None and error["code"] == code, case
    login = codes["sensitive nested and in lists"]
    assert login.error is None and login.captures is not None
    redacted_in, redacted_out = login.captures
    assert (
        redacted_in["password"]
        == redacted_in["card"]["number"]
        == redacted_in["cards"][1]["number"]
        == "***REDACTED***"
    )
    assert redacted_in["api_key"] == "***REDACTED***" and redacted_in["user"] == "ann"
    assert redacted_out["session_token"] == "***REDACTED***"
    assert [(entry[0], entry[1]) for entry in login.log] == [
        ("A", "before"),
        ("B", "before"),
        ("B", "after"),
        ("A", "after"),
    ]
    assert codes["middleware recovers"].result == {"recovered": "MODULE_EXECUTE_ERROR"}
    assert codes["echo"].result == {"text": "HELLO", "rewritten": True}
    assert codes["extra keys ignored"].error is None
    denied = (await both("denying", *CASES["approval"]))[1]
    assert denied.error is not None and denied.error["code"] == "APPROVAL_DENIED"
    regex = (await both("regex", *CASES["sensitive nested and in lists"]))[1]
    assert regex.captures is not None and regex.captures[0]["card"]["number"] == "[gone]"


async def test_format_warnings_are_the_same(caplog: pytest.LogCaptureFixture) -> None:
    """Models built from a JSON schema warn about format violations (SHOULD-level), on both sides."""
    from tests._support.pipeline import Echoed

    class Mail(Echoed):
        __apcore_source_schema__ = {"type": "object", "properties": {"text": {"type": "string", "format": "email"}}}

    warnings: list[list[str]] = []
    for fast in (False, True):
        side = make_side("plain", fast=fast)
        side.module("eq.echo").input_schema = Mail
        side.module("eq.echo").output_schema = Mail
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            await side.executor.call_async("eq.echo", {"text": "not-an-address"}, Context.create())
        warnings.append([r.getMessage() for r in caplog.records if "format" in r.getMessage()])
        close_pipeline(side.executor)
    assert warnings[0], "the standard pipeline warned about nothing: the case is vacuous"
    assert warnings[1] == warnings[0]


async def test_stream_is_the_same() -> None:
    """``Executor.stream``: chunks, then output validation and middleware on the accumulated output."""
    from tests._support.pipeline import Recording, Session

    class Streamer(Recording):
        description = "Streams a session in three chunks"
        input_schema = Session
        output_schema = Session
        annotations = ModuleAnnotations(streaming=True)

        def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
            return inputs

        async def stream(self, inputs: dict[str, Any], context: Any) -> Any:
            self.contexts.append(context)
            yield {"user": inputs["user"]}
            yield {"session_token": "tok-stream"}
            yield {"history": inputs.get("history", [])}

    seen = []
    for fast in (False, True):
        side = make_side("governed", fast=fast)
        side.registry.register("eq.stream", Streamer())
        inputs = {"user": "ann", "session_token": "t", "history": [CARD]}
        chunks = [chunk async for chunk in side.executor.stream("eq.stream", inputs, Context.create())]
        module = side.module("eq.stream")
        context = module.contexts[-1]
        seen.append((chunks, context.redacted_inputs, context.redacted_output, list(side.log)))
        close_pipeline(side.executor)
    assert seen[0][2] is not None and seen[0][2]["session_token"] == "***REDACTED***"
    assert [entry[1] for entry in seen[0][3]] == ["before", "before", "after", "after"]
    assert seen[1] == seen[0]


async def test_reregistered_module_uses_its_new_schema() -> None:
    """The schema cache follows the registry: a module replaced under the same id is revalidated."""
    from tests._support.pipeline import Echo, Measure

    results: list[list[Any]] = []
    for fast in (False, True):
        side = make_side("plain", fast=fast)
        runs: list[Outcome] = []
        side.registry.register("eq.swap", Echo())
        runs.append(await outcome(side, "eq.swap", {"text": "hi"}))
        side.registry.unregister("eq.swap")
        side.registry.register("eq.swap", Measure())
        runs.append(await outcome(side, "eq.swap", {"text": "hi"}))
        runs.append(await outcome(side, "eq.swap", SQUARE))
        results.append([(run.result, run.error, run.captures) for run in runs])
        close_pipeline(side.executor)
    assert results[0][0][0] == {"text": "hi"}
    assert results[0][1][1] is not None and results[0][1][1]["code"] == "SCHEMA_VALIDATION_ERROR"
    assert results[1] == results[0]


async def test_schema_swapped_on_the_instance_is_seen() -> None:
    """Even without a registry event, a module whose schema class changed gets a new plan."""
    from tests._support.pipeline import Shape

    side = make_side("plain", fast=True)
    first = await outcome(side, "eq.echo", {"text": "hi"})
    side.module("eq.echo").input_schema = Shape
    second = await outcome(side, "eq.echo", {"text": "hi"})
    close_pipeline(side.executor)
    assert first.error is None
    assert second.error is not None and second.error["code"] == "SCHEMA_VALIDATION_ERROR"


def test_describe_error_keeps_what_callers_see() -> None:
    from apcore.errors import ModuleTimeoutError

    described = describe_error(ModuleTimeoutError(module_id="m", timeout_ms=5))
    assert described["code"] == "MODULE_TIMEOUT" and described["details"]["timeout_ms"] == 5


KEY_NAMES = [
    "X-API-Key", "AccessKey", "password", "my_token", "secretValue", "_secret_x", "Authorization", "apiKey",
    "sessionId", "cookie_jar", "name", "city", "count", "tokens", "pin", "PIN-code", "a b c", "x-custom-1",
    "Bearer", "author", "credentials", "private-key", "passwd2", "", "-", "_",
]  # fmt: skip


@pytest.mark.parametrize("keys", [None, ["X-Custom*", "pin", "a-b c", "?ey"]], ids=["default", "custom"])
def test_key_verdicts_are_apcores(keys: list[str] | None) -> None:
    """The prepared key rule answers as apcore's own ``_key_matches`` for every name."""
    redaction = Redaction(RedactionConfig(sensitive_keys=keys))
    patterns = keys if keys is not None else default_sensitive_keys()
    assert [redaction.key_matches(name) for name in KEY_NAMES] == [key_matches(name, patterns) for name in KEY_NAMES]
