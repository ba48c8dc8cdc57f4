"""``GET /openai/tools?format=agents``: both Agents forms over HTTP, equal to ``to_openai_tools``, the
``mcp`` form pointing at this server's public ``/mcp`` URL; bad Agents queries answer 400."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from apcore import Executor

from apcore_mcp import Settings, create_app, to_openai_tools

from tests._support.modules import module_of
from tests.openai.test_openai import Out, make_registry, ok
from tests.openai.test_openai_agents_format import check_agents
from tests.openai.test_openai_formats import nested


async def get(app: Any, query: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        return await http.get(f"/openai/tools?{query}")


async def test_the_functions_form_equals_to_openai_tools_and_names_non_strict_modules() -> None:
    registry = make_registry()
    registry.register("edge.over", module_of(ok, input=nested(11), output=Out, description="Too deep"))
    executor = Executor(registry)
    app = create_app(executor)
    for query, strict in (("format=agents", False), ("format=agents&form=functions&strict=true", True)):
        response = await get(app, query)
        assert response.status_code == 200
        assert response.json() == to_openai_tools(executor, strict=strict, format="agents")
        check_agents(response.json())
    assert response.headers["X-OpenAI-Non-Strict"] == "edge-over: 11 object levels (limit 10)"


@pytest.mark.parametrize(
    ("settings", "url", "label"),
    [
        (Settings(), "http://127.0.0.1:8000/mcp", "apcore-mcp"),
        (Settings(public_url="https://tools.example.test/team/", name="Team tools"), None, "Team_tools"),
    ],
)
async def test_the_mcp_form_points_at_the_public_mcp_url(settings: Settings, url: str | None, label: str) -> None:
    executor = Executor(make_registry())
    response = await get(create_app(executor, settings), "format=agents&form=mcp")
    assert response.status_code == 200
    expected_url = url or "https://tools.example.test/team/mcp"
    assert response.json() == to_openai_tools(
        executor, format="agents", agents_form="mcp", server_url=expected_url, server_label=label
    )
    check_agents(response.json())


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("format=agents&form=xml", "agents_form must be one of functions, mcp, got 'xml'"),
        ("form=mcp", "form exists only in format 'agents'"),
        ("format=responses&form=functions", "form exists only in format 'agents'"),
        ("format=agents&form=mcp&strict=true", "strict and embed_annotations apply to function tools"),
        ("format=agents&form=mcp&embed_annotations=1", "strict and embed_annotations apply to function tools"),
        ("format=agents&defer_loading=true", "namespaces and defer_loading exist only in format 'responses'"),
        ("format=agents&namespace_size=3", "namespaces and defer_loading exist only in format 'responses'"),
        ("format=Agents", "format must be one of chat, responses, agents, got 'Agents'"),
    ],
)
async def test_bad_agents_queries_answer_400(query: str, message: str) -> None:
    response = await get(create_app(Executor(make_registry())), query)
    assert response.status_code == 400
    assert response.json()["error"].startswith(message), response.json()
