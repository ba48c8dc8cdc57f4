"""Approval a person decides, with ``apcore-mcp --workers 2``: the link works on every worker.

The call asks on one worker; the person's browser (each request a connection of its own, so
the kernel hands it to either worker) opens the page and decides; the client's retry (again
any worker) gets the decision. A decline and a replayed link run nothing, whichever worker
they reach. Our CLI in a process group, stopped by its PID; raw 2026-07-28 JSON-RPC (handshake
clients are served stateless by workers and get no link).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from apcore_mcp.testing import RunningServer

from tests._support.replicas import modern_call
from tests._support.workers import base_of, workers

URL_ELICITATION: dict[str, Any] = {"form": {}, "url": {}}
OPENED = {"action": "accept"}
VISITS = 12
"""Page requests on fresh connections: all on the asking worker by chance is about 1 in 2**11."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with workers(tmp_path_factory.mktemp("person"), "--approval-policy", "person") as running:
        yield running


def ask(base: str, target: str) -> tuple[str, dict[str, Any]]:
    """Call ``replica.purge`` once: the link's page path, and the retry's arguments (state, answer)."""
    result = modern_call(base, "replica.purge", {"target": target}, elicitation=URL_ELICITATION)["result"]
    ((key, request),) = result["inputRequests"].items()
    path = urlsplit(request["params"]["url"]).path
    return path, {"request_state": result["requestState"], "input_responses": {key: OPENED}}


def retry(base: str, target: str, again: dict[str, Any]) -> dict[str, Any]:
    return modern_call(base, "replica.purge", {"target": target}, elicitation=URL_ELICITATION, **again)


def form_key(page: httpx.Response) -> str:
    found = re.search(r'name="form_key" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def decide(base: str, path: str, choice: str) -> httpx.Response:
    """A person's browser: open the page and press a button, each request on a fresh connection."""
    page = httpx.get(f"{base}{path}", timeout=10)
    assert page.status_code == 200, page.text
    return httpx.post(f"{base}{path}", data={"decision": choice, "form_key": form_key(page)}, timeout=10)


def test_a_link_opened_on_any_worker_approves_the_call(server: RunningServer) -> None:
    base = base_of(server)
    path, again = ask(base, "approved")
    pages = [httpx.get(f"{base}{path}", timeout=10) for _ in range(VISITS)]
    assert [page.status_code for page in pages] == [200] * VISITS, [page.text for page in pages]
    assert len({form_key(page) for page in pages}) == 1  # every worker renders the same form
    queue = httpx.get(f"{base}/approvals", timeout=10).json()["pending"]
    assert [entry["path"] for entry in queue] == [path]
    assert decide(base, path, "approve").status_code == 200
    answer = retry(base, "approved", again)["result"]
    assert not answer.get("isError"), answer
    assert answer["structuredContent"]["purged"] == "approved"
    # Replayed: the link decides nothing on any worker, the state runs nothing again.
    replays = [httpx.post(f"{base}{path}", data={"decision": "approve"}, timeout=10) for _ in range(4)]
    assert {reply.status_code for reply in replays} == {404}
    assert [httpx.get(f"{base}{path}", timeout=10).status_code for _ in range(4)] == [404] * 4
    replayed = retry(base, "approved", again)["result"]  # its approval is gone: a person is asked anew
    assert "structuredContent" not in replayed and replayed["inputRequests"].keys() != again["input_responses"].keys()


def test_a_decline_on_any_worker_runs_nothing(server: RunningServer) -> None:
    base = base_of(server)
    path, again = ask(base, "declined")
    assert decide(base, path, "decline").status_code == 200
    answer = retry(base, "declined", again)["result"]
    assert answer.get("isError"), answer
    assert "declined" in answer["content"][0]["text"]
    queue = httpx.get(f"{base}/approvals", timeout=10).json()["pending"]
    assert path not in [entry["path"] for entry in queue]
