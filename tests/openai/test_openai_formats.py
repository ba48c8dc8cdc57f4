"""Issue 20: the Responses format (namespaces, defer_loading), OpenAI's strict limits, both formats
checked against the ``openai`` package's own request types."""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from apcore import Executor, Registry
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, NamespaceToolParam, ToolSearchToolParam
from pydantic import BaseModel, TypeAdapter, create_model

from apcore_mcp import create_app, to_openai_tools
from apcore_mcp.openai.strict import OPENAI_LIMITS, strict_problem, to_strict_schema
from apcore_mcp.testing import command_server, start_server

from tests._support.hostile_modules import hostile_registry
from tests._support.modules import module_of
from tests.openai.test_openai import CropIn, Out, make_registry, ok

EXAMPLES = "examples/extensions"

# -- the openai package's types as the judge ----------------------------------------------------------

RESPONSES_TYPES: dict[str, Any] = {
    "function": FunctionToolParam,
    "namespace": NamespaceToolParam,
    "tool_search": ToolSearchToolParam,
}


def check_chat(tools: list[dict[str, Any]]) -> None:
    """Every tool is a ``ChatCompletionToolParam``, no key unknown to it."""
    adapter = TypeAdapter(ChatCompletionToolParam)
    for tool in tools:
        adapter.validate_python(tool, strict=True, extra="forbid")


def check_responses(tools: list[dict[str, Any]]) -> None:
    """Every tool is the Responses ``ToolParam`` of its type, no key unknown to it (nested ones too)."""
    for tool in tools:
        checked = TypeAdapter(RESPONSES_TYPES[tool["type"]]).validate_python(tool, strict=True, extra="forbid")
        if tool["type"] == "namespace":
            assert len(list(checked["tools"])) == len(tool["tools"])  # pydantic checks an Iterable as it is read


def example_registry() -> Registry:
    registry = Registry(extensions_dir=EXAMPLES)
    registry.discover()
    return registry


REGISTRIES = {"examples": example_registry, "tests": make_registry, "hostile": hostile_registry}


@pytest.mark.parametrize("source", list(REGISTRIES))
@pytest.mark.parametrize("strict", [False, True])
def test_both_formats_are_valid_openai_requests(source: str, strict: bool) -> None:
    registry = REGISTRIES[source]()
    check_chat(to_openai_tools(registry, strict=strict, embed_annotations=True))
    for options in ({}, {"defer_loading": True}, {"namespace_depth": 0}, {"namespace_size": 1}):
        tools = to_openai_tools(registry, strict=strict, format="responses", **options)
        assert tools
        check_responses(tools)


def test_a_wrong_key_fails_the_check() -> None:
    function = {"type": "function", "name": "a", "parameters": {}, "strict": True}
    with pytest.raises(ValueError, match="function"):
        check_responses([{**function, "function": {}}])
    with pytest.raises(ValueError, match="bogus"):
        check_responses([{"type": "namespace", "name": "n", "description": "d", "tools": [{**function, "bogus": 1}]}])
    with pytest.raises(ValueError, match="strict"):
        check_responses([{"type": "function", "name": "a", "parameters": {}}])  # Required in the Responses type
    with pytest.raises(ValueError, match="name"):
        check_chat([{"type": "function", "name": "a", "function": {"name": "a"}}])


# -- the default stays the Chat Completions list ---------------------------------------------------------


def test_the_default_is_the_chat_format_byte_for_byte() -> None:
    registry = make_registry()
    for strict in (False, True):
        default = json.dumps(to_openai_tools(registry, strict=strict))
        assert json.dumps(to_openai_tools(registry, strict=strict, format="chat")) == default
    assert to_openai_tools(registry)[0] == {
        "type": "function",
        "function": {
            "name": "image-crop",
            "description": "Crop an image",
            "parameters": to_openai_tools(registry)[0]["function"]["parameters"],
        },
    }


# -- the Responses format ---------------------------------------------------------------------------------


def test_responses_groups_functions_into_namespaces_by_module_id() -> None:
    registry = make_registry()
    tools = to_openai_tools(registry, strict=True, format="responses")
    chat = {tool["function"]["name"]: tool["function"] for tool in to_openai_tools(registry, strict=True)}
    assert [(tool["type"], tool["name"]) for tool in tools] == [("namespace", "image"), ("namespace", "text")]
    image = tools[0]
    assert image["description"] == "Tools for image: crop (Crop an image); resize (Resize an image)"
    assert image["tools"][0] == {
        "type": "function",
        "name": "image-crop",
        "description": "Crop an image",
        "parameters": chat["image-crop"]["parameters"],
        "strict": True,
    }
    assert [function["name"] for function in image["tools"]] == ["image-crop", "image-resize"]
    assert tools[1]["tools"][0]["name"] == "text-echo"
    loose = to_openai_tools(registry, format="responses")
    assert all(function["strict"] is False for tool in loose for function in tool["tools"])


def grouped_registry() -> Registry:
    registry = Registry()
    for module_id in ("ping", "shop.cart.add", "shop.cart.empty", "shop.order.place", "shop.refund"):
        registry.register(module_id, module_of(ok, input=CropIn, output=Out, description=f"Do {module_id}"))
    return registry


def layout(tools: list[dict[str, Any]]) -> list[tuple[str, list[str]] | str]:
    return [
        (tool["name"], [f["name"] for f in tool["tools"]]) if tool["type"] == "namespace" else tool["name"]
        for tool in tools
    ]


def test_namespace_depth_size_and_top_level_functions() -> None:
    registry = grouped_registry()
    shop = ["shop-cart-add", "shop-cart-empty", "shop-order-place", "shop-refund"]
    assert layout(to_openai_tools(registry, format="responses")) == ["ping", ("shop", shop)]
    assert layout(to_openai_tools(registry, format="responses", namespace_depth=2)) == [
        "ping",
        ("shop-cart", ["shop-cart-add", "shop-cart-empty"]),
        ("shop-order", ["shop-order-place"]),
        ("shop", ["shop-refund"]),  # an id two segments long: its namespace is its first segment
    ]
    assert layout(to_openai_tools(registry, format="responses", namespace_size=3)) == [
        "ping",
        ("shop--1", shop[:3]),
        ("shop--2", shop[3:]),
    ]
    assert layout(to_openai_tools(registry, format="responses", namespace_depth=0)) == ["ping", *shop]


def test_namespace_description_can_be_given() -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def describe(prefix: str, descriptions: Any) -> str:
        seen.append((prefix, dict(descriptions)))
        return f"All about {prefix}"

    tools = to_openai_tools(grouped_registry(), format="responses", namespace_description=describe)
    assert tools[1]["description"] == "All about shop"
    assert seen == [
        ("shop", {m: f"Do {m}" for m in ("shop.cart.add", "shop.cart.empty", "shop.order.place", "shop.refund")})
    ]


def test_a_long_generated_description_is_cut() -> None:
    registry = Registry()
    for index in range(3):
        registry.register(f"big.m{index}", module_of(ok, input=CropIn, output=Out, description="x" * 600))
    description = to_openai_tools(registry, format="responses")[0]["description"]
    assert len(description) == 1024 and description.endswith("...")


def test_defer_loading_marks_every_function_and_adds_tool_search() -> None:
    tools = to_openai_tools(grouped_registry(), format="responses", defer_loading=True)
    assert tools[-1] == {"type": "tool_search"}
    functions = [tools[0], *tools[1]["tools"]]
    assert [f["defer_loading"] for f in functions] == [True] * 5
    assert "defer_loading" not in tools[1]  # it applies to the functions, not the namespace
    assert not any(
        "defer_loading" in f
        for t in to_openai_tools(grouped_registry(), format="responses")
        for f in t.get("tools", [t])
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "xml"}, "format must be one of chat, responses, agents, got 'xml'"),
        ({"defer_loading": True}, "only in format 'responses'"),
        ({"namespace_size": 3}, "only in format 'responses'"),
        ({"format": "responses", "namespace_size": 0}, "namespace_size must be 1 or more"),
        ({"format": "responses", "namespace_depth": -1}, "namespace_depth must be 0 or more"),
    ],
)
def test_bad_format_options_raise(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_openai_tools(make_registry(), **options)


# -- strict limits ----------------------------------------------------------------------------------------


def nested(levels: int) -> type[BaseModel]:
    """An input model whose objects nest ``levels`` deep (the root is level 1)."""
    model: type[BaseModel] = create_model("L0", value=(int, ...))
    for level in range(1, levels):
        model = create_model(f"L{level}", inner=(model, ...))
    return model


def wide(count: int) -> type[BaseModel]:
    fields: dict[str, Any] = {f"p{index}": (int, ...) for index in range(count)}
    return create_model("Wide", **fields)


def enum_of(count: int, width: int = 3) -> type[BaseModel]:
    values = tuple(str(index).zfill(width) for index in range(count))
    fields: dict[str, Any] = {"pick": (Literal.__getitem__(values), ...)}
    return create_model("Choice", **fields)


def long_names(count: int, length: int) -> type[BaseModel]:
    fields: dict[str, Any] = {f"n{index}" + "a" * (length - 1 - len(str(index))): (int, ...) for index in range(count)}
    return create_model("Named", **fields)


LIMIT_CASES = [
    (nested(10), nested(11), "11 object levels (limit 10)"),
    (wide(5_000), wide(5_001), "5001 properties (limit 5000)"),
    (enum_of(1_000), enum_of(1_001), "1001 enum values (limit 1000)"),
    (
        long_names(120, 1_000),
        long_names(121, 1_000),
        "121000 characters of names, enum and const values (limit 120000)",
    ),
    (enum_of(251, 59), enum_of(251, 60), "15060 characters in one enum of over 250 values (limit 15000)"),
]


@pytest.mark.parametrize(
    ("fits", "too_big", "reason"), LIMIT_CASES, ids=["depth", "properties", "enum", "chars", "large-enum"]
)
def test_a_schema_over_a_limit_is_listed_non_strict_with_its_reason(
    fits: type[BaseModel], too_big: type[BaseModel], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = make_registry()
    registry.register("edge.fits", module_of(ok, input=fits, output=Out, description="At the limit"))
    registry.register("edge.over", module_of(ok, input=too_big, output=Out, description="Over the limit"))
    with caplog.at_level(logging.WARNING, logger="apcore_mcp"):
        chat = {tool["function"]["name"]: tool["function"] for tool in to_openai_tools(registry, strict=True)}
    assert chat["edge-fits"]["strict"] is True
    assert chat["edge-over"]["strict"] is False
    assert chat["edge-over"]["parameters"] == registry_schema(registry, "edge.over")  # its own schema, not closed
    assert chat["image-resize"]["strict"] is True  # the others stay strict
    assert [r.getMessage() for r in caplog.records if "edge.over" in r.getMessage()] == [
        f"Module edge.over is listed non-strict for OpenAI: {reason}"
    ]
    responses = to_openai_tools(registry, strict=True, format="responses")
    edge = next(tool for tool in responses if tool["name"] == "edge")
    assert [f["strict"] for f in edge["tools"]] == [True, False]


def registry_schema(registry: Registry, module_id: str) -> dict[str, Any]:
    loose = to_openai_tools(registry, prefix=module_id)
    assert len(loose) == 1
    result: dict[str, Any] = loose[0]["function"]["parameters"]
    return result


def test_strict_problem_reads_the_documented_numbers() -> None:
    assert (OPENAI_LIMITS.max_depth, OPENAI_LIMITS.max_properties, OPENAI_LIMITS.max_enum_values) == (10, 5_000, 1_000)
    assert (OPENAI_LIMITS.max_total_chars, OPENAI_LIMITS.max_large_enum_chars) == (120_000, 15_000)
    assert strict_problem(
        to_strict_schema({"type": "object", "properties": {"a": {"type": "string", "const": "x" * 120_000}}})
    ) == ("120001 characters of names, enum and const values (limit 120000)")


# -- over HTTP --------------------------------------------------------------------------------------------


async def get(app: Any, query: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        return await http.get(f"/openai/tools?{query}")


async def test_the_route_serves_the_responses_format_and_names_non_strict_modules() -> None:
    registry = grouped_registry()
    registry.register("edge.over", module_of(ok, input=nested(11), output=Out, description="Too deep"))
    executor = Executor(registry)
    app = create_app(executor)
    response = await get(app, "format=responses&strict=true&namespace_size=2&defer_loading=true")
    assert response.status_code == 200
    assert response.json() == to_openai_tools(
        executor, strict=True, format="responses", namespace_size=2, defer_loading=True
    )
    check_responses(response.json())
    assert response.headers["X-OpenAI-Non-Strict"] == "edge-over: 11 object levels (limit 10)"
    chat = await get(app, "strict=true")
    assert chat.json() == to_openai_tools(executor, strict=True)
    assert chat.headers["X-OpenAI-Non-Strict"] == "edge-over: 11 object levels (limit 10)"
    assert "X-OpenAI-Non-Strict" not in (await get(app, "")).headers  # not asked for strict: nothing to report


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("format=xml", "format must be one of chat, responses, agents, got 'xml'"),
        ("defer_loading=true", "namespaces and defer_loading exist only in format 'responses'"),
        ("format=responses&namespace_depth=-1", "namespace_depth must be a whole number, got '-1'"),
        ("format=responses&namespace_size=0", "namespace_size must be 1 or more"),
        ("format=responses&defer_loading=maybe", "defer_loading must be true or false, got 'maybe'"),
        ("format=responses&namespaces=2", "Unknown query parameter: namespaces"),
    ],
)
async def test_the_route_rejects_bad_format_options(query: str, message: str) -> None:
    response = await get(create_app(Executor(make_registry())), query)
    assert response.status_code == 400
    assert response.json() == {"error": message}


# -- the page's curl command, against a real server --------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
OPENAI_PAGE = REPO / "docs" / "openai.md"


def page_block(block_id: str) -> str:
    """The fenced block between ``<!-- ID -->`` and ``<!-- /ID -->`` of docs/openai.md."""
    text = OPENAI_PAGE.read_text()
    inner = text.split(f"<!-- {block_id} -->", 1)[1].split(f"<!-- /{block_id} -->", 1)[0]
    return inner.strip().removeprefix("```bash").removesuffix("```").strip()


def run_curl(command: list[str]) -> tuple[int, set[str], str]:
    """Status, header names (lower case) and body of a ``curl -i URL`` (httpx where curl is missing)."""
    if shutil.which("curl") is None:
        answer = httpx.get(command[-1], timeout=30)
        return answer.status_code, {name.lower() for name in answer.headers}, answer.text
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    head, _, body = done.stdout.partition("\n\n")  # text mode reads \r\n as \n
    status_line, *lines = head.splitlines()
    return int(status_line.split()[1]), {line.split(":", 1)[0].lower() for line in lines}, body


def test_the_pages_responses_and_agents_curl_commands_answer(tmp_path: Path) -> None:
    argv = [str(Path(sys.executable).parent / "apcore-mcp"), "--extensions-dir", "examples/extensions"]
    argv += ["--transport", "streamable-http", "--port", "{port}"]
    server = start_server(command_server(argv, cwd=REPO, health_path="/health"), "streamable-http", tmp_path)
    try:
        assert server.base_url is not None
        command = shlex.split(page_block("openai-responses-curl").replace("http://127.0.0.1:8000", server.base_url))
        assert command[:2] == ["curl", "-i"]
        status, headers, body = run_curl(command)
        agents = shlex.split(page_block("openai-agents-curl").replace("http://127.0.0.1:8000", server.base_url))
        assert agents[0] == "curl"
        agents_status, _, agents_body = run_curl(["curl", "-i", *agents[1:]])
    finally:
        server.stop()
    assert agents_status == 200
    (mcp,) = json.loads(agents_body)
    assert mcp["transport"] == {"type": "http", "server_url": f"{server.base_url}/mcp"}  # the bind address
    assert mcp["allowed_tools"] == ["files.purge", "geo.distance", "reports.chart", "tasks.schedule", "text.stats"]
    assert status == 200
    assert "x-openai-non-strict" not in headers  # every example module fits
    tools = json.loads(body)
    check_responses(tools)
    assert [tool["name"] for tool in tools[:-1]] == ["files", "geo", "reports", "tasks", "text"]
    assert tools[-1] == {"type": "tool_search"}
    assert all(function["defer_loading"] and function["strict"] for tool in tools[:-1] for function in tool["tools"])
