"""Both official MCP conformance suites, in both eras, against the CLI serving ``examples/conformance``.

The example registry exposes every fixture the suites call, built from the product's features
(modules, resource modules, prompt files); nothing in the server knows about the suites.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apcore_mcp.testing import apcore_server, start_server

from tests._support.conformance import ALPHA, STABLE, Report, run

pytestmark = pytest.mark.conformance

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "conformance"


@pytest.fixture(scope="module")
def conformance_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The CLI serving the conformance example (our own harness starts, waits for and stops it)."""
    command = apcore_server(
        EXAMPLE / "extensions", "--prompts-dir", str(EXAMPLE / "prompts"), "--dynamic", "--log-level", "WARNING"
    )
    server = start_server(command, "streamable-http", tmp_path_factory.mktemp("conformance-server"))
    try:
        assert server.url is not None
        yield server.url
    finally:
        server.stop()


def assert_all_pass(report: Report, expected: int) -> None:
    summary = report.summary()
    assert not report.missing, summary
    failed = [s.name for s in report.scored if not s.passed]
    vacuous = [s.name for s in report.scored if s.vacuous]
    assert not failed, summary
    assert not vacuous, summary
    assert len(report.scored) == expected, summary


def test_stable_suite_all_scenarios(conformance_url: str) -> None:
    """@modelcontextprotocol/conformance 0.1.16 --suite all: every scenario, handshake era."""
    assert_all_pass(run(conformance_url, STABLE, "--suite", "all"), 32)


def test_2026_07_28_requirements(conformance_url: str) -> None:
    """The 37 scenarios the 2026-07-28 revision requires, at its stateless wire."""
    assert_all_pass(run(conformance_url, ALPHA, "--requirements", "2026-07-28"), 37)


def test_2025_11_25_requirements(conformance_url: str) -> None:
    """The 30 scenarios the 2025-11-25 revision requires, with the initialize handshake."""
    assert_all_pass(run(conformance_url, ALPHA, "--requirements", "2025-11-25"), 30)


def test_runner_reports_a_missing_fixture_as_failed(conformance_url: str) -> None:
    """The runner itself: a scenario whose fixture is absent fails, it does not pass quietly."""
    report = run(conformance_url.replace("/mcp", "/nope"), STABLE, "--scenario", "tools-list")
    assert report.scenarios, report.log
    assert not report.scenarios["tools-list"].passed
