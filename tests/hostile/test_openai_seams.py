"""The seams of the Responses format and the strict limits: long ids at namespace depth, parts of a
cut namespace, the route's cache across formats and headers, odd query values."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from apcore import Executor, Registry
from pydantic import create_model

from apcore_mcp import Settings, create_app, from_openai_call, to_openai_tools

from tests._support.hostile_modules import LONG_ID, hostile_registry
from tests._support.modules import module_of
from tests.openai.test_openai import CropIn, Out, ok
from tests.openai.test_openai_formats import check_responses, nested

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEEP_PREFIX = "a" * 40 + "." + "b" * 40  # 81 characters: a namespace name that must be shortened


def names_of(tools: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    namespaces = [tool["name"] for tool in tools if tool["type"] == "namespace"]
    functions = [f["name"] for tool in tools if tool["type"] != "tool_search" for f in tool.get("tools", [tool])]
    return namespaces, functions


def long_registry(count: int) -> Registry:
    registry = Registry()
    for index in range(count):
        registry.register(f"{DEEP_PREFIX}.op{index}", module_of(ok, input=CropIn, output=Out, description="Op"))
    registry.register(LONG_ID, module_of(ok, input=CropIn, output=Out, description="Long"))
    return registry


@pytest.mark.parametrize("depth", [1, 2, 3, 50])
@pytest.mark.parametrize("size", [1, 2, 9])
def test_every_namespace_and_function_name_fits_and_is_unique(depth: int, size: int) -> None:
    tools = to_openai_tools(
        long_registry(5), strict=True, format="responses", namespace_depth=depth, namespace_size=size
    )
    check_responses(tools)
    namespaces, functions = names_of(tools)
    assert all(OPENAI_NAME.match(name) for name in namespaces + functions), namespaces + functions
    assert len(set(namespaces)) == len(namespaces)
    assert len(set(functions)) == len(functions) == 6
    assert all(len(tool["tools"]) <= size for tool in tools if tool["type"] == "namespace")


def test_a_call_from_any_namespace_maps_back_to_its_module() -> None:
    registry = long_registry(3)
    tools = to_openai_tools(registry, strict=True, format="responses", namespace_depth=2, namespace_size=1)
    _, functions = names_of(tools)
    ids = {from_openai_call(name, "{}", registry)[0] for name in functions}
    assert ids == {f"{DEEP_PREFIX}.op{index}" for index in range(3)} | {LONG_ID}


def test_the_hostile_registry_renders_in_both_formats() -> None:
    registry = hostile_registry()
    for strict in (False, True):
        chat = to_openai_tools(registry, strict=strict)
        responses = to_openai_tools(registry, strict=strict, format="responses", defer_loading=True)
        check_responses(responses)
        assert sorted(names_of(responses)[1]) == sorted(tool["function"]["name"] for tool in chat)


async def get(http: httpx.AsyncClient, query: str) -> httpx.Response:
    return await http.get(f"/openai/tools?{query}")


async def test_the_routes_cache_keeps_each_query_its_own_body_and_header() -> None:
    registry = Registry()
    registry.register("deep.one", module_of(ok, input=nested(11), output=Out, description="Too deep"))
    registry.register("flat.one", module_of(ok, input=CropIn, output=Out, description="Flat"))
    executor = Executor(registry)
    app = create_app(executor, Settings(dynamic=True))  # follows the registry from its lifespan's start
    transport = httpx.ASGITransport(app=app)
    queries = [
        "strict=true",
        "",
        "format=responses&strict=true",
        "format=responses",
        "format=responses&namespace_depth=0",
    ]
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        for _ in range(2):  # the second round is served from the cache
            for query in queries:
                response = await get(http, query)
                options: dict[str, Any] = dict(pair.split("=") for pair in query.split("&") if pair)
                strict = options.pop("strict", None) == "true"
                if "namespace_depth" in options:
                    options["namespace_depth"] = int(options["namespace_depth"])
                assert response.json() == to_openai_tools(executor, strict=strict, **options), query
                header = response.headers.get("X-OpenAI-Non-Strict")
                assert header == ("deep-one: 11 object levels (limit 10)" if strict else None), query
        registry.register("deep.two", module_of(ok, input=nested(12), output=Out, description="Deeper"))
        response = await get(http, "format=responses&strict=true")
        assert response.headers["X-OpenAI-Non-Strict"] == (
            "deep-one: 11 object levels (limit 10); deep-two: 12 object levels (limit 10)"
        )
        deep = next(tool for tool in response.json() if tool["name"] == "deep")
        assert [f["strict"] for f in deep["tools"]] == [False, False]


@pytest.mark.parametrize(
    "query",
    [
        "format=responses&namespace_size=1.5",
        "format=responses&namespace_depth=",
        "format=responses&namespace_size=%C2%B2",  # a superscript two: a digit to str.isdigit, not to int
        "format=Responses",
        "format=",
        "format=chat&namespace_depth=2",
    ],
)
async def test_odd_query_values_answer_400(query: str) -> None:
    transport = httpx.ASGITransport(app=create_app(Executor(long_registry(1))))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await get(http, query)
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error"}


def test_a_schema_at_every_limit_at_once_stays_strict() -> None:
    fields: dict[str, Any] = {f"p{index}": (int, ...) for index in range(4_990)}
    fields["inner"] = (nested(9), ...)  # root + 9 = 10 levels
    registry = Registry()
    registry.register("edge.full", module_of(ok, input=create_model("Full", **fields), output=Out, description="Full"))
    (tool,) = to_openai_tools(registry, strict=True, format="responses", namespace_depth=0)
    assert tool["strict"] is True
