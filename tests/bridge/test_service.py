"""The service routes: /openai/tools, /metrics, /ready, the explorer API, and env settings."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from apcore_mcp import create_app, to_openai_tools
from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.diagnostics import hidden_tools
from apcore_mcp.settings import Settings
from apcore_mcp.settings.env import settings_from_env

from tests._support.hostile import explorer_call
from tests._support.modules import EXPECTED_TOOLS, Echo, make_executor
from tests._support.sessions import running_http

REPO = Path(__file__).resolve().parents[2]


def asgi_client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


# -- /openai/tools ----------------------------------------------------------------------------


COMBINATIONS = list(itertools.product([False, True], [False, True], [None, ["public"]], [None, "demo."]))


@pytest.mark.parametrize(("strict", "embed", "tags", "prefix"), COMBINATIONS)
async def test_openai_route_equals_to_openai_tools(
    strict: bool, embed: bool, tags: list[str] | None, prefix: str | None
) -> None:
    executor = make_executor()
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("strict", str(strict).lower()),
        ("embed_annotations", "1" if embed else "0"),
    ]
    params += [("tags", tag) for tag in tags or []]
    if prefix:
        params.append(("prefix", prefix))
    async with asgi_client(create_app(executor)) as http:
        response = await http.get("/openai/tools", params=params)
    assert response.status_code == 200
    expected = to_openai_tools(executor, strict=strict, embed_annotations=embed, tags=tags, prefix=prefix)
    assert response.json() == expected
    assert expected  # the comparison is not between two empty lists


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("strict=maybe", "strict must be true or false, got 'maybe'"),
        ("embed_annotations=2", "embed_annotations must be true or false, got '2'"),
        ("tags=", "Tag values must not be empty"),
        ("prefix=", "prefix must not be empty"),
        ("colour=blue", "Unknown query parameter: colour"),
    ],
)
async def test_openai_route_rejects_bad_values(query: str, message: str) -> None:
    async with asgi_client(create_app(make_executor())) as http:
        response = await http.get(f"/openai/tools?{query}")
    assert response.status_code == 400
    assert response.json() == {"error": message}


async def test_openai_route_reflects_live_changes() -> None:
    executor = make_executor()
    app = create_app(executor, Settings(dynamic=True))
    # The app follows the registry while it runs: from its lifespan's start to its end.
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        # Asked before the change too, so an answer kept from before would show here.
        names = [tool["function"]["name"] for tool in (await http.get("/openai/tools")).json()]
        assert "late-arrival" not in names
        executor.registry.register("late.arrival", Echo())
        names = [tool["function"]["name"] for tool in (await http.get("/openai/tools")).json()]
        assert "late-arrival" in names
        executor.registry.unregister("late.arrival")
        names = [tool["function"]["name"] for tool in (await http.get("/openai/tools")).json()]
        assert "late-arrival" not in names


# -- /metrics, /health, /ready ---------------------------------------------------------------


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_after_real_calls_and_back_to_idle() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    async with running_http(bridge) as url:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            await client.call_tool("demo.echo", {"text": "a"})
            await client.call_tool("demo.echo", {"text": "b"})
            await client.call_tool("demo.echo", {})
            await client.call_tool("demo.boom", {})
            await client.call_tool("no.such.tool", {})
            async with httpx.AsyncClient() as http:
                during = samples((await http.get(f"{url}/metrics")).text)
        async with httpx.AsyncClient() as http:
            await http.get(f"{url}/health", headers={"Host": "evil.example"})
            await http.get(f"{url}/health", headers={"Origin": "http://evil.example"})
            response = await http.get(f"{url}/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    after = samples(response.text)
    calls = "apcore_mcp_tool_calls_total"
    assert after[(calls, (("outcome", "ok"), ("tool", "demo.echo")))] == 2
    assert after[(calls, (("outcome", "invalid_input"), ("tool", "demo.echo")))] == 1
    assert after[(calls, (("outcome", "internal"), ("tool", "demo.boom")))] == 1
    assert after[(calls, (("outcome", "not_found"), ("tool", "_unknown")))] == 1
    assert after[("apcore_mcp_tool_call_duration_seconds_count", (("tool", "demo.echo"),))] == 3
    assert after[("apcore_mcp_registered_tools", ())] == len(EXPECTED_TOOLS)
    assert during[("apcore_mcp_active_sessions", ())] == 1
    assert during[("apcore_mcp_open_streams", (("route", "/mcp"),))] >= 1
    assert after[("apcore_mcp_tool_calls_in_flight", ())] == 0
    assert after[("apcore_mcp_active_sessions", ())] == 0
    assert after[("apcore_mcp_open_streams", (("route", "/mcp"),))] == 0
    assert after[("apcore_mcp_rejected_requests_total", (("reason", "host"),))] == 1
    assert after[("apcore_mcp_rejected_requests_total", (("reason", "origin"),))] == 1
    label_values = {value for _, labels in after for _, value in labels}
    assert label_values <= {
        "ok",
        "invalid_input",
        "internal",
        "not_found",
        "demo.echo",
        "demo.boom",
        "_unknown",
        "host",
        "origin",
        "/mcp",
        "/sse",
        # the HTTP request histogram: route templates, methods, status classes
        "/health",
        "/metrics",
        "_unmatched",
        "GET",
        "POST",
        "DELETE",
        "2xx",
        "4xx",
    } | {str(b) for b in label_values if _is_bucket(b)}


def _is_bucket(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return value == "+Inf"
    return True


async def test_health_and_ready_wait_for_the_lifespan() -> None:
    app = create_app(make_executor())
    async with asgi_client(app) as http:  # ASGITransport runs no lifespan
        assert (await http.get("/health")).status_code == 503
        assert (await http.get("/ready")).status_code == 503
    bridge = Bridge.build(make_executor(), Settings())
    async with running_http(bridge) as url, httpx.AsyncClient() as http:
        ready = (await http.get(f"{url}/ready")).json()
    # the sample registry's modules that cannot be served are counted, never named (bridge/diagnostics.py)
    hidden = len(hidden_tools(bridge, None))
    assert ready == {"status": "ready", "module_count": len(EXPECTED_TOOLS), "hidden_tools": hidden} and hidden > 0


async def test_metrics_can_be_turned_off() -> None:
    async with asgi_client(create_app(make_executor(), Settings(metrics=False))) as http:
        assert (await http.get("/metrics")).status_code == 404


# -- explorer API (calls go through its MCP door, /explorer/mcp) -------------------------------


@contextlib.asynccontextmanager
async def serving_asgi(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """``app`` with its lifespan running (the MCP door's session manager), over httpx in memory."""
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        yield http


def outcome(response: httpx.Response) -> tuple[bool, Any]:
    """A call's ``(isError, structured output or error text)``."""
    result = response.json()["result"]
    return result["isError"], result["content"][0]["text"] if result["isError"] else result["structuredContent"]


async def test_explorer_is_off_by_default() -> None:
    async with serving_asgi(create_app(make_executor())) as http:
        assert (await http.get("/explorer/")).status_code == 404
        assert (await explorer_call(http, "", "demo.echo", {"text": "x"})).status_code == 404


async def test_explorer_lists_and_describes_tools() -> None:
    async with asgi_client(create_app(make_executor(), Settings(explorer=True))) as http:
        page = await http.get("/explorer/")
        tools = (await http.get("/explorer/tools")).json()
        echo = (await http.get("/explorer/tools/demo.echo")).json()
        missing = await http.get("/explorer/tools/nope")
        redirect = await http.get("/explorer", follow_redirects=False)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy and "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert [tool["name"] for tool in tools] == EXPECTED_TOOLS
    assert tools[0]["annotations"]["destructiveHint"] is True and tools[0]["requiresApproval"] is True
    assert echo["inputSchema"]["required"] == ["text"] and echo["documentation"].startswith("Echo repeats")
    assert (missing.status_code, missing.json()) == (404, {"error": "Tool 'nope' not found"})
    assert (redirect.status_code, redirect.headers["location"]) == (308, "/explorer/")


async def test_explorer_execution_is_refused_unless_enabled() -> None:
    async with serving_asgi(create_app(make_executor(), Settings(explorer=True))) as http:
        response = await explorer_call(http, "", "demo.echo", {"text": "x"})
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("Tool execution from the explorer is off")


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("demo.echo", {"text": "hi", "times": 2}, (False, {"echo": "hi hi"})),
        ("demo.echo", {}, (True, "Input validation failed:\n- text: Field required (required)")),
        ("demo.boom", {}, (True, "Internal error occurred")),
        ("demo.denied", {"text": "x"}, (True, "Access denied")),
        ("demo.slow", {"seconds": 2}, (True, "Module timed out after 100ms")),
        ("nope.tool", {}, (True, "Module not found: nope.tool")),
    ],
)
async def test_explorer_calls_go_through_the_executor(tool: str, arguments: dict[str, Any], expected: Any) -> None:
    app = create_app(make_executor(), Settings(explorer=True, allow_execute=True))
    async with serving_asgi(app) as http:
        response = await explorer_call(http, "", tool, arguments)
    assert (response.status_code, outcome(response)) == (200, expected)
    assert "access-control-allow-origin" not in response.headers


async def test_explorer_refuses_cross_site_posts_and_oversized_bodies() -> None:
    app = create_app(make_executor(), Settings(explorer=True, allow_execute=True))
    async with serving_asgi(app) as http:
        cross = await explorer_call(http, "", "demo.echo", {"text": "x"}, {"Origin": "https://attacker.example"})
        # the page's own origin: scheme, host and port of the request
        same = await explorer_call(http, "", "demo.echo", {"text": "x"}, {"Origin": "http://127.0.0.1"})
        huge = await explorer_call(http, "", "demo.echo", {"text": "x" * (5 * 1024 * 1024)})
    assert cross.status_code == 403
    assert same.status_code == 200
    assert huge.status_code == 413


async def test_explorer_requires_a_token_off_loopback() -> None:
    settings = Settings(host="0.0.0.0", explorer=True, allow_execute=True, execute_token="s3cret-token-0123456789")
    async with serving_asgi(create_app(make_executor(), settings)) as http:
        config = (await http.get("/explorer/config")).json()
        missing = await explorer_call(http, "", "demo.echo", {"text": "x"})
        wrong = await explorer_call(http, "", "demo.echo", {"text": "x"}, {"Authorization": "Bearer nope"})
        right = await explorer_call(
            http, "", "demo.echo", {"text": "x"}, {"Authorization": "Bearer s3cret-token-0123456789"}
        )
    assert config["tokenRequired"] is True and config["allowExecute"] is True
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401
    assert (right.status_code, outcome(right)) == (200, (False, {"echo": "x"}))


async def test_explorer_makes_a_token_when_none_is_configured(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="apcore_mcp")
    settings = Settings(host="0.0.0.0", explorer=True, allow_execute=True)
    async with serving_asgi(create_app(make_executor(), settings)) as http:
        assert (await http.get("/explorer/config")).json()["tokenRequired"] is True
        assert (await explorer_call(http, "", "demo.echo", {"text": "x"})).status_code == 401
        token_file = Path(next(m for m in caplog.messages if "token for this run in" in m).rsplit(" ", 1)[-1])
        token = token_file.read_text()
        token_file.unlink()
        ok = await explorer_call(http, "", "demo.echo", {"text": "x"}, {"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200


async def test_explorer_prefix_is_configurable() -> None:
    async with asgi_client(create_app(make_executor(), Settings(explorer=True, explorer_prefix="/tools-ui/"))) as http:
        assert (await http.get("/tools-ui/")).status_code == 200
        assert len((await http.get("/tools-ui/tools")).json()) == len(EXPECTED_TOOLS)
        assert (await http.get("/explorer/")).status_code == 404


@pytest.mark.parametrize("prefix", ["explorer", "/mcp", "/health/x", "/"])
def test_explorer_prefix_must_be_a_free_path(prefix: str) -> None:
    with pytest.raises(ValueError, match="explorer_prefix"):
        Settings(explorer_prefix=prefix)


# -- settings from the environment ------------------------------------------------------------


def test_env_settings_are_parsed() -> None:
    settings, extensions = settings_from_env(
        {
            "APCORE_MCP_EXTENSIONS_DIR": "/srv/ext",
            "APCORE_MCP_NAME": "tools",
            "APCORE_MCP_TAGS": "a, b",
            "APCORE_MCP_ALLOWED_HOSTS": "mcp.example.com,10.0.0.5:8000",
            "APCORE_MCP_HOST": "0.0.0.0",
            "APCORE_MCP_EXPLORER": "yes",
            "APCORE_MCP_ALLOW_EXECUTE": "0",
            "APCORE_MCP_STATELESS": "true",
            "APCORE_MCP_SHUTDOWN_TIMEOUT": "2.5",
            "PATH": "/usr/bin",
        }
    )
    assert extensions == "/srv/ext"
    assert (settings.name, settings.tags, settings.host) == ("tools", ("a", "b"), "0.0.0.0")
    assert settings.allowed_hosts == ("mcp.example.com", "10.0.0.5:8000")
    assert (settings.explorer, settings.allow_execute, settings.stateless) == (True, False, True)
    assert settings.shutdown_timeout == 2.5


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"APCORE_MCP_EXPLORER": "maybe"}, "APCORE_MCP_EXPLORER: expected true or false, got 'maybe'"),
        ({"APCORE_MCP_SHUTDOWN_TIMEOUT": "soon"}, "APCORE_MCP_SHUTDOWN_TIMEOUT: expected a number"),
        ({"APCORE_MCP_PREFIX": ""}, "APCORE_MCP_PREFIX: prefix must not be empty"),
        ({"APCORE_MCP_LOG_LEVEL": "LOUD"}, "APCORE_MCP_LOG_LEVEL: Unknown log level"),
        ({"APCORE_MCP_EXPLORER_PREFIX": "x"}, "APCORE_MCP_EXPLORER_PREFIX: explorer_prefix must start with '/'"),
        ({"APCORE_MCP_NAME": ""}, "APCORE_MCP_NAME: name must not be empty"),
        ({"APCORE_MCP_EXECUTE_TOKEN": "short"}, "APCORE_MCP_EXECUTE_TOKEN: execute_token must be at least 16"),
        ({"APCORE_MCP_EXPLORE": "1"}, "APCORE_MCP_EXPLORE: unknown setting"),
    ],
)
def test_a_wrong_env_setting_is_named(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as error:
        settings_from_env(environ)
    assert str(error.value).startswith(message)


def test_app_entry_point_names_a_wrong_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import app

    monkeypatch.setenv("APCORE_MCP_EXTENSIONS_DIR", str(REPO / "examples" / "extensions"))
    monkeypatch.setenv("APCORE_MCP_ALLOW_EXECUTE", "perhaps")
    with pytest.raises(app.SettingsError, match="APCORE_MCP_ALLOW_EXECUTE: expected true or false"):
        app.create_app()
    monkeypatch.setenv("APCORE_MCP_ALLOW_EXECUTE", "false")
    monkeypatch.setenv("APCORE_MCP_EXTENSIONS_DIR", "/no/such/dir")
    with pytest.raises(app.SettingsError, match="APCORE_MCP_EXTENSIONS_DIR: not a directory"):
        app.create_app()
    monkeypatch.setenv("APCORE_MCP_EXTENSIONS_DIR", str(REPO / "examples" / "extensions"))
    served = app.create_app()
    assert len(served.state.bridge.catalog) == 5
