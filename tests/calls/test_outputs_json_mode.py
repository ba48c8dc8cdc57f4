"""A module may return its output in JSON form: enum values and ISO dates as plain strings.

Inputs reach a module as JSON, so authors return JSON values too. Each route a client calls by
(in memory and over HTTP, both protocol eras, the 2026-07-28 direct path and the SDK's path, the
explorer's JSON route) must accept them, sync and async modules alike, nested models included,
and send the JSON form as the structured result. An output that really breaks its schema comes
back as a tool error naming the field and its constraint, logged as a WARNING without traceback.
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import AsyncIterator
from datetime import date, datetime
from typing import Any

import pytest
from apcore import Executor, ModuleAnnotations, Registry
from apcore.errors import SchemaValidationError
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.errors import to_safe_error
from apcore_mcp.pipeline import build_executor, close_pipeline
from apcore_mcp.settings import Settings

from tests._support.hostile import serving
from tests._support.log_capture import every_record
from tests._support.results import text_of
from tests._support.sessions import Inbox, direct_requests, open_session

SECRET = "hunter2"
"""Part of each mismatching output, never of a call's arguments: it must appear in no message and no log."""


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Ask(BaseModel):
    unit: str


class Day(BaseModel):
    unit: Unit
    on: date


class Reading(BaseModel):
    unit: Unit
    day: date
    at: datetime
    where: Day
    history: list[Day]


def reading(unit: str, *, native: bool = False) -> dict[str, Any]:
    """A reading in ``unit``: as JSON values, or as the Python values the model holds (``native``)."""
    if unit == "kelvin":  # no such unit: a wrong enum value and a date with month 13
        bad = f"kelvin:{SECRET}"
        return {"unit": bad, "day": "2026-13-28", "at": "2026-11-28T10:00:00Z", "where": {"unit": bad, "on": "x"}}
    if native:
        day = Day(unit=Unit(unit), on=date(2026, 11, 27))
        at = datetime.fromisoformat("2026-11-28T10:00:00+00:00")
        return {"unit": Unit(unit), "day": date(2026, 11, 28), "at": at, "where": day, "history": [day]}
    day_json = {"unit": unit, "on": "2026-11-27"}
    return {"unit": unit, "day": "2026-11-28", "at": "2026-11-28T10:00:00Z", "where": day_json, "history": [day_json]}


def expected(unit: str) -> dict[str, Any]:
    day = {"unit": unit, "on": "2026-11-27"}
    return {"unit": unit, "day": "2026-11-28", "at": "2026-11-28T10:00:00Z", "where": day, "history": [day]}


class SyncReading:
    description = "A reading, JSON values returned by a sync execute"
    input_schema = Ask
    output_schema = Reading
    annotations = ModuleAnnotations(readonly=True)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return reading(inputs["unit"])


class AsyncReading(SyncReading):
    description = "A reading, JSON values returned by an async execute"

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:  # type: ignore[override]
        return reading(inputs["unit"])


class NativeReading(SyncReading):
    description = "A reading, Python values (enum members, dates, models) as before"

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return reading(inputs["unit"], native=True)


def weather() -> Registry:
    registry = Registry()
    registry.register("weather.sync", SyncReading())
    registry.register("weather.async", AsyncReading())
    registry.register("weather.native", NativeReading())
    return registry


MISMATCH = (
    "The module's output does not match its schema: "
    "field 'unit': Input should be 'celsius' or 'fahrenheit'; "
    "field 'day': Input should be a valid date in the format YYYY-MM-DD; "
    "field 'where.unit': Input should be 'celsius' or 'fahrenheit'; "
    "field 'where.on': Input should be a valid date in the format YYYY-MM-DD; "
    "field 'history': Field required"
)

ROUTES = ["memory", "memory-modern", "http", "http-modern", "http-modern-sdk"]


@contextlib.asynccontextmanager
async def client_by(route: str) -> AsyncIterator[Any]:
    """An SDK client of a fresh server of ``weather()`` over ``route`` (checked to take the path it names)."""
    if route.startswith("memory"):
        bridge = Bridge.build(weather(), Settings())
        async with BridgeService(bridge), open_session(route, bridge, Inbox()) as client:
            yield client
        return
    async with serving(weather(), direct_path=route != "http-modern-sdk") as (url, _):
        async with open_session(route, url, Inbox()) as client:
            yield client
        if route != "http":
            assert (await direct_requests(url) > 0) is (route == "http-modern"), route


@pytest.mark.parametrize("route", ROUTES)
async def test_json_values_are_accepted_and_sent_as_json(route: str) -> None:
    async with client_by(route) as client:
        for tool in ("weather.sync", "weather.async", "weather.native"):
            result = await client.call_tool(tool, {"unit": "fahrenheit"})
            assert result.is_error is False, f"{tool}: {text_of(result)}"  # was "Internal error occurred"
            assert result.structured_content == expected("fahrenheit"), tool


@pytest.mark.parametrize("route", ROUTES)
async def test_a_mismatching_output_names_its_fields(route: str) -> None:
    async with client_by(route) as client:
        with every_record() as logs:
            for tool in ("weather.sync", "weather.async"):
                result = await client.call_tool(tool, {"unit": "kelvin"})
                assert result.is_error is True
                assert text_of(result) == MISMATCH  # was "Internal error occurred"
    assert not [record for record in logs.records if record.levelname in ("ERROR", "CRITICAL")]
    warned = [r.getMessage() for r in logs.records if r.levelname == "WARNING" and "output does not" in r.getMessage()]
    assert len(warned) == 2 and "weather.sync" in warned[0] and "field 'where.unit'" in warned[0]
    assert not [line for line in logs.rendered if SECRET in line or "Traceback" in line]


# -- the check itself, on an Executor with the fast pipeline (what Bridge builds for a Registry) -----


class Named(BaseModel):
    name: str
    ratio: float
    unit: Unit


async def run_output(output: dict[str, Any], output_schema: Any) -> dict[str, Any]:
    class Returns:
        description = "Returns a fixed output"
        input_schema = Ask

        def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
            return output

    Returns.output_schema = output_schema  # type: ignore[attr-defined]
    registry = Registry()
    registry.register("fixed.output", Returns())
    executor: Executor = build_executor(registry)
    try:
        result: dict[str, Any] = await executor.call_async("fixed.output", {"unit": "celsius"})
        return result
    finally:
        close_pipeline(executor)


async def test_the_module_gets_its_own_output_back_unchanged() -> None:
    """Only the check reads the JSON form: a Python caller of the Executor gets what the module returned."""
    output = reading("celsius")
    assert await run_output(output, Reading) == output


async def test_lone_surrogates_and_nan_still_pass_beside_json_values() -> None:
    output = {"name": "caf\udce9.txt", "ratio": math.nan, "unit": "celsius"}
    assert (await run_output(output, Named))["name"] == "caf\udce9.txt"


async def test_a_json_schema_contract_never_quotes_the_value() -> None:
    """jsonschema's messages quote the value (``'kelvin:hunter2' is not one of ...``): only the keyword is kept."""
    schema = {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]}
    with pytest.raises(SchemaValidationError) as caught:
        await run_output({"unit": f"kelvin:{SECRET}"}, schema)
    safe = to_safe_error(caught.value)
    assert (safe.kind, safe.message) == (
        "output",
        "The module's output does not match its schema: field 'unit': does not satisfy the schema (enum)",
    )  # was "Input validation failed:\n- unit: 'kelvin:hunter2' is not one of [...]": a leak, and not the input's fault
    assert SECRET not in str(caught.value)


async def test_many_mismatches_make_a_bounded_message() -> None:
    with pytest.raises(SchemaValidationError) as caught:
        await run_output({"history": [{"unit": "k", "on": "2026-11-28"}] * 500}, Reading)
    message = to_safe_error(caught.value).message
    assert message.endswith("; and 494 more") and len(message) < 1500
