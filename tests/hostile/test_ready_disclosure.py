"""``/ready`` is open without authentication (for probes): it must not show what a token guards.

The service runs as a process (the CLI, over HTTP on a free loopback port) with API-key auth
and the explorer on, and two upstream servers: one whose tools got readable ids (``get-sum``
is ``my_tools.get_sum``) and one stdio command that prints a private path, host, database and
user to stderr and exits 3. An anonymous ``GET /ready`` still names both servers and says
that ``db`` exited with code 3, but holds no tool name (which ``/mcp``, ``/openai/tools`` and
the explorer show to authenticated callers only), none of that stderr and not the command.
The full reason is in the server's log; the way from a readable id back to the upstream's own
tool name is in the explorer, for a caller with a key.

Before the fix, ``/ready`` had ``upstreams.renamed`` (our id -> server and tool) and the
failed server's command line and last stderr lines.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from apcore_mcp.testing import RunningServer, apcore_server, start_server
from apcore_mcp.upstream.names import module_ids

from tests._support.auth import api_key_entry, bearer
from tests._support.hostile import modern_headers, tool_call
from tests._support.named_upstream import NAMED
from tests._support.upstreams import stdio_entry

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
KEY = "ready-disclosure-key-" + "k" * 24
TOOLS = ["get-sum", "Get-Sum", "listOrders"]
PRIVATE = ["/srv/vault-7c1d/orders.db", "db-primary.corp-internal.example", "svc_orders_rw", "orders_2026"]
FAILING = (
    "import sys\n"
    f"print('connecting to {PRIVATE[1]}:5432 as {PRIVATE[2]}', file=sys.stderr)\n"
    f"print('fatal: cannot open {PRIVATE[0]} (database {PRIVATE[3]})', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


def upstream_processes(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (the named upstream of this run, wherever reparented)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningServer]:
    marker = f"marker{uuid.uuid4().hex}"  # a tool name of this run only: its processes can be found
    config = tmp_path / "mcp.json"
    named = {"command": sys.executable, "args": [str(NAMED), *TOOLS, marker], "timeout": 20}
    failing = {"command": sys.executable, "args": ["-c", FAILING], "timeout": 10}
    config.write_text(json.dumps({"mcpServers": {"my-tools": named, "db": failing}}))
    env = {"APCORE_MCP_AUTH": "api-key", "APCORE_MCP_AUTH_API_KEYS": api_key_entry(KEY, "alice")}
    command = apcore_server(EXTENSIONS, "--mcp-config", str(config), "--explorer", env=env)
    server = start_server(command, "streamable-http", tmp_path)
    try:
        yield server
    finally:
        server.stop()
    assert upstream_processes(marker) == []


def test_an_anonymous_ready_says_which_server_failed_and_nothing_a_token_guards(served: RunningServer) -> None:
    ids = module_ids("my_tools", TOOLS)
    with httpx.Client(base_url=served.base_url or "", timeout=10) as http:
        ready = http.get("/ready")
        anonymous_tools = http.get("/explorer/tools")
        tools = http.get("/explorer/tools", headers=bearer(KEY))
        detail = http.get(f"/explorer/tools/{ids['get-sum']}", headers=bearer(KEY))
    text = ready.text

    # nothing a token guards: no tool name (theirs or ours), no stderr, not the command
    assert ready.status_code == 200, text
    leaked = [word for word in [*TOOLS, *ids.values(), "get_sum", "list_orders", *PRIVATE] if word in text]
    assert leaked == [], text
    assert sys.executable not in text and "import sys" not in text and "-c" not in text, text
    # what a probe and a dashboard need
    upstreams = ready.json()["upstreams"]
    assert set(upstreams["mounted"]) == {"my-tools"} and set(upstreams["failed"]) == {"db"}
    assert upstreams["failed"]["db"] == "upstream 'db' did not start: exited with code 3 (see the server log)"

    # the full reason is in the log
    [line] = [line for line in served.log_path.read_text().splitlines() if "Upstream server 'db' not mounted" in line]
    assert "exited with code 3" in line and "import sys" in line and all(word in line for word in PRIVATE), line

    # the way back from our ids to the upstream's names, for a caller with a key
    assert anonymous_tools.status_code == 401
    assert tools.status_code == 200, tools.text
    shown = {tool["name"]: tool.get("upstream") for tool in tools.json()}
    assert {ours: shown[ours] for ours in ids.values()} == {
        ours: {"server": "my-tools", "tool": name} for name, ours in ids.items()
    }
    assert detail.status_code == 200 and detail.json()["upstream"] == {"server": "my-tools", "tool": "get-sum"}
    assert not any(origin for name, origin in shown.items() if not name.startswith("my_tools."))  # local tools


def test_an_anonymous_ready_names_no_caller_of_a_per_caller_server(tmp_path: Path) -> None:
    """A server run per caller (``sharing: per-principal``) is one ``/ready`` entry, not one per user.

    Before the fix its pool was keyed ``own@<principal>``: anyone could read who uses the service.
    """
    callers = {"caller-key-alice-" + "a" * 24: "alice-of-accounts", "caller-key-bob-" + "b" * 26: "bob-of-payroll"}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"own": stdio_entry(sharing="per-principal")}}))
    keys = ",".join(api_key_entry(key, who) for key, who in callers.items())
    command = apcore_server(
        EXTENSIONS, "--mcp-config", str(config), env={"APCORE_MCP_AUTH": "api-key", "APCORE_MCP_AUTH_API_KEYS": keys}
    )
    server = start_server(command, "streamable-http", tmp_path)
    try:
        with httpx.Client(base_url=server.base_url or "", timeout=20) as http:
            for number, key in enumerate(callers, 1):
                call = tool_call(number, "own.echo", {"text": "hi"}, modern=True)
                headers = {**modern_headers("tools/call", "own.echo"), **bearer(key)}
                answer = http.post("/mcp", json=call, headers=headers)
                assert answer.status_code == 200 and not answer.json()["result"].get("isError"), answer.text
            ready = http.get("/ready")
        log = server.output()
    finally:
        server.stop()
    assert ready.status_code == 200, log
    assert [who for who in callers.values() if who in ready.text] == [], ready.text
    pool = ready.json()["upstreams"]["pool"]
    assert set(pool) == {"own"}, pool  # the handle listing its tools, and the callers' in one entry
    assert (pool["own"]["per_caller"]["callers"], pool["own"]["per_caller"]["connected"]) == (2, 2), pool
