"""Both official MCP conformance suites, in both eras, against the CLI serving ``examples/conformance``.

Every suite runs twice: on the direct path (the default) and with ``--no-direct-path``, so both
paths are shown to agree; the 2026-07-28 run checks ``/metrics`` that each used the path it names.

The example registry exposes every fixture the suites call, built from the product's features
(modules, resource modules, prompt files); nothing in the server knows about the suites.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from apcore_mcp.testing import apcore_server, start_server

from tests._support.conformance import ALPHA, STABLE, Report, run
from tests._support.sessions import direct_requests_in

pytestmark = pytest.mark.conformance

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "conformance"


@pytest.fixture(scope="module", params=["direct", "sdk"])
def conformance_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The CLI serving the conformance example (our own harness starts, waits for and stops it).

    Once per path: ``direct`` as shipped (2026-07-28 requests that answer once skip the SDK's
    per-request streams), ``sdk`` with ``--no-direct-path`` (every request through the SDK).
    """
    path: str = request.param
    command = apcore_server(
        EXAMPLE / "extensions",
        "--prompts-dir",
        str(EXAMPLE / "prompts"),
        "--dynamic",
        "--log-level",
        "WARNING",
        *(["--no-direct-path"] if path == "sdk" else []),
    )
    server = start_server(command, "streamable-http", tmp_path_factory.mktemp(f"conformance-server-{path}"))
    try:
        assert server.url is not None
        yield server.url
    finally:
        server.stop()


def direct_requests(mcp_url: str) -> float:
    """Requests the CLI answered on the direct path so far (its ``/metrics``, on by default)."""
    response = httpx.get(mcp_url.removesuffix("/mcp") + "/metrics", timeout=10)
    response.raise_for_status()
    return direct_requests_in(response.text)


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


def test_2026_07_28_requirements(conformance_url: str, request: pytest.FixtureRequest) -> None:
    """The 37 scenarios the 2026-07-28 revision requires, at its stateless wire, on the path the variant names."""
    assert_all_pass(run(conformance_url, ALPHA, "--requirements", "2026-07-28"), 37)
    answered = direct_requests(conformance_url)
    if request.node.callspec.params["conformance_url"] == "direct":
        assert answered > 0, "the suite passed, but nothing took the direct path"
    else:
        assert answered == 0, f"--no-direct-path, yet {answered} requests took the direct path"


def test_2025_11_25_requirements(conformance_url: str) -> None:
    """The 30 scenarios the 2025-11-25 revision requires, with the initialize handshake."""
    assert_all_pass(run(conformance_url, ALPHA, "--requirements", "2025-11-25"), 30)


@pytest.mark.parametrize("conformance_url", ["direct"], indirect=True)  # the runner, not the server: once
def test_runner_reports_a_missing_fixture_as_failed(conformance_url: str) -> None:
    """The runner itself: a scenario whose fixture is absent fails, it does not pass quietly."""
    report = run(conformance_url.replace("/mcp", "/nope"), STABLE, "--scenario", "tools-list")
    assert report.scenarios, report.log
    assert not report.scenarios["tools-list"].passed
