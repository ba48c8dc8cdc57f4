"""The conformance suite's Skills scenarios (SEP-2640) against the CLI serving ``examples/conformance``
with ``--skills``: the skills are the ones generated from the example's own modules.

``resources/directory/read`` is optional and not served, so that scenario's checks skip; its
other check (the capability read from ``server/discover``) must still pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.testing import apcore_server, start_server

from tests._support.conformance import ALPHA, run

pytestmark = pytest.mark.conformance

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conformance"
SCENARIOS = ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"]


@pytest.fixture(scope="module")
def skills_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    command = apcore_server(EXAMPLE / "extensions", "--skills", "--log-level", "WARNING")
    server = start_server(command, "streamable-http", tmp_path_factory.mktemp("conformance-skills"))
    try:
        assert server.url is not None
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_skills_scenario(skills_url: str, scenario: str) -> None:
    report = run(skills_url, ALPHA, "--scenario", scenario)
    [result] = report.scenarios.values()
    assert result.passed and not result.failures, report.summary()
    assert result.counts.get("SUCCESS", 0) > 0, report.summary()  # something was checked
