"""The conformance suite's task scenarios (``@modelcontextprotocol/conformance`` 0.2.0-alpha.12,
SEP-2663, not scored by its 2026-07-28 requirements yet) against our CLI serving their fixtures
(``tests/task_conformance``).

Not run here, because we do not offer what they test: ``tasks-mrtr-input`` and
``tasks-mrtr-composition`` (a task waiting for the client's input, ``input_required``, answered
with ``tasks/update``: our tasks cannot ask the client anything), and ``tasks-status-notifications``
(the suite skips it itself; we send no ``notifications/tasks``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.testing import apcore_server, start_server

from tests._support.conformance import ALPHA, run

pytestmark = pytest.mark.conformance

FIXTURES = Path(__file__).resolve().parents[1] / "task_conformance"
SCENARIOS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
    "tasks-request-headers",
]


@pytest.fixture(scope="module")
def fixtures_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    command = apcore_server(FIXTURES, "--log-level", "ERROR")
    server = start_server(command, "streamable-http", tmp_path_factory.mktemp("task-conformance"))
    try:
        assert server.url is not None
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_task_scenario_passes(fixtures_url: str, scenario: str) -> None:
    report = run(fixtures_url, ALPHA, "--scenario", scenario, timeout=120)
    result = report.scenarios.get(scenario)
    assert result is not None, report.log
    assert result.passed and not result.vacuous, report.summary()
