"""``serve()`` with its whole contract: ``python -m tests.servers.contract EVENTS TRANSPORT PORT [flags]``.

Appends one line per event to the file EVENTS: ``startup`` (``on_startup``), ``run <module>``
(a module ran), ``shutdown`` (``on_shutdown``), then ``metrics <json>``: the apcore
``MetricsCollector``'s counters and histogram counts as seen at shutdown. Flags: ``--async``
(the callbacks are ``async def``), ``--validate`` (``validate_inputs=True``), ``--bad-startup``
(``on_startup`` raises ``ValueError("no database")``), ``--bad-shutdown`` (``on_shutdown`` raises
after writing its line).

Modules: ``contract.add`` (``a``, ``b``: integers) and ``contract.fail`` (raises).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from apcore import MetricsCollector, Registry
from pydantic import BaseModel

from apcore_mcp import serve


class AddIn(BaseModel):
    a: int
    b: int


class AddOut(BaseModel):
    sum: int


class Empty(BaseModel):
    pass


def record(events: Path, line: str) -> None:
    with events.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


class Add:
    description = "Add two integers"
    input_schema = AddIn
    output_schema = AddOut

    def __init__(self, events: Path) -> None:
        self.events = events

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        record(self.events, "run contract.add")
        return {"sum": inputs["a"] + inputs["b"]}


class Fail:
    description = "Always fails"
    input_schema = Empty
    output_schema = Empty

    def __init__(self, events: Path) -> None:
        self.events = events

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        record(self.events, "run contract.fail")
        raise RuntimeError("contract.fail failed")


def metrics_line(collector: MetricsCollector) -> str:
    """The collector's calls, errors and duration sums and counts, by module, as JSON."""
    snapshot = collector.snapshot()
    calls = {
        f"{name}:{dict(labels)['module_id']}:{dict(labels).get('status') or dict(labels).get('error_code')}": value
        for (name, labels), value in snapshot["counters"].items()
    }
    histograms = snapshot["histograms"]
    durations = {
        dict(labels)["module_id"]: {"count": count, "sum": histograms["sums"][(name, labels)]}
        for (name, labels), count in histograms["counts"].items()
    }
    return "metrics " + json.dumps({"calls": calls, "durations": durations}, sort_keys=True)


def main(argv: list[str]) -> None:
    events, transport, port, flags = Path(argv[0]), argv[1], int(argv[2]), set(argv[3:])
    registry = Registry()
    registry.register("contract.add", Add(events))
    registry.register("contract.fail", Fail(events))
    collector = MetricsCollector()

    def started() -> None:
        record(events, "startup")
        if "--bad-startup" in flags:
            raise ValueError("no database")

    def stopped() -> None:
        record(events, "shutdown")
        record(events, metrics_line(collector))
        if "--bad-shutdown" in flags:
            raise OSError("flush failed")

    async def started_async() -> None:
        await asyncio.sleep(0)
        started()

    async def stopped_async() -> None:
        await asyncio.sleep(0)
        stopped()

    asynchronous = "--async" in flags
    serve(
        registry,
        transport=transport,
        port=port,
        on_startup=started_async if asynchronous else started,
        on_shutdown=stopped_async if asynchronous else stopped,
        metrics_collector=collector,
        validate_inputs="--validate" in flags,
        log_level="INFO",
    )
    record(events, "returned")


if __name__ == "__main__":
    main(sys.argv[1:])
