"""The direct path (``http/direct.py``) answers a 2026-07-28 request exactly as the SDK would.

Two servers of one registry run side by side in this event loop, one with ``direct_path=True``
and one with ``direct_path=False``. Every case sends the same raw POST to both and compares the
status, every response header but ``Date``, and the body bytes (sealed ``requestState`` values
masked: they are random). ``apcore_mcp_direct_requests_total`` on ``/metrics`` says which path
answered: the direct server's counter moves for the requests it takes, the SDK server's never;
the refusal and tool-call counters move alike on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
import pytest
import pytest_asyncio
from apcore import Registry
from mcp.server import _streamable_http_modern as sdk_modern
from mcp.server.context import ServerRequestContext
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from mcp_types.jsonrpc import HEADER_MISMATCH
from pydantic import BaseModel

import apcore_mcp.http.direct as direct_module
from apcore_mcp import _sdk as sdk_internals
from apcore_mcp import sample
from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.limits import RATE_LIMITED
from apcore_mcp.http.direct import DIRECT_METHODS
from apcore_mcp.settings import Settings

from tests._support.hostile import MODERN, MODERN_META, samples
from tests._support.modules import Routed, make_executor, make_registry
from tests._support.sessions import REPO, running_http

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROMPTS = REPO / "examples" / "conformance" / "prompts"
UNSUPPORTED_VERSION = -32022
MISSING_CAPABILITY = -32021
INTERNAL_ERROR = -32603
DIRECT_COUNTER = "apcore_mcp_direct_requests_total"
PARITY_COUNTERS = ("apcore_mcp_rejected_requests_total", "apcore_mcp_tool_calls_total")
"""Counters that must move alike on both servers for the same request."""
SDK_ONLY = frozenset(
    {
        *("ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "subscriptions/listen"),
        *("tasks/get", "tasks/update", "tasks/cancel", "tasks/result"),
    }
)
"""Request methods the server registers that the SDK answers (``subscriptions/listen`` streams;
``tasks/*`` are polled, not the hot path, and ``tasks/result`` waits for the task's end; the rest
are not 2026-07-28 methods: ``-32601``)."""
SLOW_SECONDS = 0.6
PING_SECONDS = 0.2


# -- modules this file adds to the test registry -------------------------------------------------


class Empty(BaseModel):
    pass


class TextOut(BaseModel):
    text: str


class StaticText:
    description = "A static text resource"
    input_schema = Empty
    output_schema = TextOut
    metadata = {"mcp_resource": {"uri": "test://direct/static", "mime_type": "text/plain", "name": "static"}}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": "static text"}


class ItemIn(BaseModel):
    id: str


class ItemOut(BaseModel):
    id: str
    label: str


class Item:
    description = "One item by id"
    input_schema = ItemIn
    output_schema = ItemOut
    metadata = {
        "mcp_resource": {
            "uri": "test://direct/items/{id}",
            "mime_type": "application/json",
            "name": "item",
            "complete": {"id": ["alpha", "alps", "beta"]},
        }
    }

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"id": inputs["id"], "label": f"item {inputs['id']}"}


class Broken:
    description = "A resource whose module fails"
    input_schema = Empty
    output_schema = TextOut
    metadata = {"mcp_resource": {"uri": "test://direct/broken", "mime_type": "text/plain", "name": "broken"}}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("the disk is gone")


class LateBroken:
    description = "A resource whose module fails after a while"
    input_schema = Empty
    output_schema = TextOut
    metadata = {"mcp_resource": {"uri": "test://direct/late-broken", "mime_type": "text/plain", "name": "late"}}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await asyncio.sleep(SLOW_SECONDS)
        raise RuntimeError("gave up late")


class SampledOut(BaseModel):
    text: str | None


class NeedsSampling:
    description = "Needs the client's sampling capability: -32021 without it"
    input_schema = Empty
    output_schema = SampledOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        question = [{"role": "user", "content": {"type": "text", "text": "Hello"}}]
        answer = await sample(context, question, max_tokens=20, required=True)
        return {"text": str((answer or {}).get("content"))}


def direct_registry() -> Registry:
    """The shared test registry plus resources (static, templated, failing) and a routed tool."""
    registry = make_registry()
    registry.register("res.static", StaticText())
    registry.register("res.item", Item())
    registry.register("res.broken", Broken())
    registry.register("res.late", LateBroken())
    registry.register("geo.routed", Routed())
    registry.register("dp.sampling", NeedsSampling())
    return registry


def bridge_of(**settings: Any) -> Bridge:
    return Bridge.build(make_executor(direct_registry()), Settings(prompts_dir=str(PROMPTS), **settings))


# -- the harness: two servers, one request, two answers ----------------------------------------


@dataclass(frozen=True)
class Served:
    url: str
    bridge: Bridge


@dataclass(frozen=True)
class Pair:
    """The same registry served with the direct path on and off, and one HTTP client for both."""

    direct: Served
    sdk: Served
    http: httpx.AsyncClient

    @property
    def both(self) -> tuple[Served, Served]:
        return (self.direct, self.sdk)


@contextlib.asynccontextmanager
async def serving_pair(build: Callable[..., Bridge] = bridge_of, **settings: Any) -> AsyncIterator[Pair]:
    """``build(direct_path=..., **settings)`` served twice by uvicorn on free 127.0.0.1 ports."""
    on, off = build(direct_path=True, **settings), build(direct_path=False, **settings)
    async with (
        running_http(on) as on_url,
        running_http(off) as off_url,
        httpx.AsyncClient(timeout=20, limits=httpx.Limits(max_connections=200)) as http,
    ):
        yield Pair(Served(on_url, on), Served(off_url, off), http)


@dataclass(frozen=True)
class Post:
    """One raw POST: the body as sent, and every header (httpx adds only host, length and its own defaults)."""

    body: bytes
    headers: Mapping[str, str]
    path: str = "/mcp"

    def with_headers(self, **changes: str | None) -> Post:
        """Headers changed (``mcp_method="x"`` sets ``mcp-method``; ``None`` removes it)."""
        headers = dict(self.headers)
        for name, value in changes.items():
            key = name.replace("_", "-")
            headers.pop(key, None)
            if value is not None:
                headers[key] = value
        return replace(self, headers=headers)


NAME_OF = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def post(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    request_id: int | str = 1,
    meta: Mapping[str, Any] | None = MODERN_META,
    version: str = MODERN,
    path: str = "/mcp",
) -> Post:
    """A well-formed 2026-07-28 request: ``_meta`` envelope, routing headers mirroring the body."""
    body_params: dict[str, Any] = dict(params or {})
    if meta is not None:
        body_params["_meta"] = dict(meta)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": method,
    }
    named = body_params.get(NAME_OF.get(method, ""))
    if isinstance(named, str):
        headers["mcp-name"] = named
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}
    return Post(json.dumps(message).encode(), headers, path)


def tool(name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> Post:
    return post("tools/call", {"name": name, "arguments": dict(arguments or {})}, **kwargs)


SEALED = re.compile(rb'"requestState":"[^"]*"')
RETRY_AFTER = re.compile(rb'"retryAfter":[0-9.e-]+')
RETRY_IN = re.compile(rb"retry in [0-9.]+s")


@dataclass(frozen=True)
class Answer:
    """A response as compared: status, headers in order (``Date`` dropped), body with sealed states masked."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key == name), None)


def answer_of(response: httpx.Response) -> Answer:
    raw = response.content
    body = SEALED.sub(b'"requestState":"<sealed>"', raw)
    # When a bucket refills is the clock's, in the data and in the message ("retry in 99.9s" or 100.0s).
    body = RETRY_AFTER.sub(b'"retryAfter":"<seconds>"', body)
    body = RETRY_IN.sub(b"retry in <seconds>s", body)
    headers = []
    for key, value in response.headers.multi_items():
        if key == "date":
            continue
        if key == "mcp-session-id":  # a handshake-era answer's (the SDK's, on both): random
            value = "<session>"
        if key == "content-length":
            assert int(value) == len(raw), (value, raw)
            value = str(len(body))
        headers.append((key, value))
    return Answer(response.status_code, tuple(headers), body)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def counters(pair: Pair, served: Served) -> Samples:
    """This server's direct-path and parity counters now."""
    exposition = (await pair.http.get(f"{served.url}/metrics")).text
    return {
        key: value
        for key, value in samples(exposition).items()
        if key[0] == DIRECT_COUNTER or key[0] in PARITY_COUNTERS
    }


def moved(before: Mapping[Any, float], after: Mapping[Any, float]) -> dict[Any, float]:
    return {key: after[key] - before.get(key, 0.0) for key in after if after[key] != before.get(key, 0.0)}


def direct_counts(delta: Mapping[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[str, float]:
    return {dict(labels)["method"]: value for (name, labels), value in delta.items() if name == DIRECT_COUNTER}


def parity_counts(delta: Mapping[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[Any, float]:
    return {key: value for key, value in delta.items() if key[0] != DIRECT_COUNTER}


async def send(pair: Pair, served: Served, request: Post) -> httpx.Response:
    return await pair.http.post(f"{served.url}{request.path}", content=request.body, headers=dict(request.headers))


async def compare(
    pair: Pair, request: Post, sdk_request: Post | None = None, *, took: str | None, counted: bool = True
) -> Answer:
    """``request`` to both servers (``sdk_request`` to the SDK one, when it must differ): one answer.

    ``took``: the method the direct server's direct path must have answered (``None``: the SDK did),
    as its counter says; ``counted=False`` where the caller checks the path itself.
    """
    before = [await counters(pair, served) for served in pair.both]
    answers = [
        answer_of(await send(pair, pair.direct, request)),
        answer_of(await send(pair, pair.sdk, sdk_request or request)),
    ]
    after = [await counters(pair, served) for served in pair.both]
    on, off = (moved(b, a) for b, a in zip(before, after, strict=True))
    assert answers[0] == answers[1], "the direct path answered differently from the SDK"
    assert direct_counts(off) == {}, "the SDK server has no direct path"
    if counted:
        assert direct_counts(on) == ({took: 1.0} if took else {}), "the request took the wrong path"
    assert parity_counts(on) == parity_counts(off), "refusals and calls counted differently"
    return answers[0]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pair() -> AsyncIterator[Pair]:
    async with serving_pair() as served:
        yield served


# -- success, one per method ---------------------------------------------------------------------


def result_of(answer: Answer) -> dict[str, Any]:
    assert answer.status == 200, answer
    message = answer.json()
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


SUCCESS = [
    pytest.param(post("server/discover"), "server/discover", id="server/discover"),
    pytest.param(post("tools/list"), "tools/list", id="tools/list"),
    pytest.param(tool("demo.echo", {"text": "hi", "times": 2}), "tools/call", id="tools/call-structured"),
    pytest.param(tool("demo.media"), "tools/call", id="tools/call-rich-content"),
    pytest.param(tool("demo.values"), "tools/call", id="tools/call-json-unfriendly-values"),
    pytest.param(
        tool("demo.path", {"start": {"x": 1, "y": 2}, "stops": [{"x": 3, "y": 4}]}), "tools/call", id="nested"
    ),
    pytest.param(tool("demo.nope"), "tools/call", id="tools/call-unknown-tool"),
    pytest.param(tool("demo.boom"), "tools/call", id="tools/call-module-raises"),
    pytest.param(tool("demo.denied", {"text": "x"}), "tools/call", id="tools/call-acl-denied"),
    pytest.param(tool("demo.slow", {"seconds": 1}), "tools/call", id="tools/call-module-timeout"),
    pytest.param(tool("demo.echo", {"times": 2}), "tools/call", id="tools/call-invalid-arguments"),
    pytest.param(tool("demo.echo", {"text": "id"}, request_id="a-string-id"), "tools/call", id="string-id"),
    pytest.param(tool("demo.echo", {"text": "ünïcødé ✓"}), "tools/call", id="tools/call-non-ascii"),
    pytest.param(post("resources/list"), "resources/list", id="resources/list"),
    pytest.param(post("resources/templates/list"), "resources/templates/list", id="resources/templates/list"),
    pytest.param(post("resources/read", {"uri": "docs://demo.echo"}), "resources/read", id="resources/read-docs"),
    pytest.param(post("resources/read", {"uri": "test://direct/static"}), "resources/read", id="resources/read-module"),
    pytest.param(post("resources/read", {"uri": "test://direct/items/7"}), "resources/read", id="resources/read-tmpl"),
    pytest.param(post("prompts/list"), "prompts/list", id="prompts/list"),
    pytest.param(
        post("prompts/get", {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
        "prompts/get",
        id="prompts/get",
    ),
    pytest.param(post("prompts/get", {"name": "test_prompt_with_image"}), "prompts/get", id="prompts/get-image"),
    pytest.param(
        post(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "pa"},
            },
        ),
        "completion/complete",
        id="completion/complete-prompt",
    ),
    pytest.param(
        post(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "test://direct/items/{id}"},
                "argument": {"name": "id", "value": "al"},
            },
        ),
        "completion/complete",
        id="completion/complete-template",
    ),
]


@pytest.mark.parametrize(("request_", "method"), SUCCESS)
async def test_success_is_answered_alike(pair: Pair, request_: Post, method: str) -> None:
    answer = await compare(pair, request_, took=method)
    result = result_of(answer)
    assert result["resultType"] == "complete"
    assert answer.header("content-type") == "application/json"


async def test_what_the_successes_carry(pair: Pair) -> None:
    """A few results looked into, so the table above compares answers worth comparing."""
    listed = result_of(await compare(pair, post("tools/list"), took="tools/list"))
    assert "demo.echo" in {entry["name"] for entry in listed["tools"]}
    assert (listed["ttlMs"], listed["cacheScope"]) == (60000, "public")
    assert listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "apcore-mcp"
    echoed = result_of(await compare(pair, tool("demo.echo", {"text": "hi", "times": 2}), took="tools/call"))
    assert echoed["structuredContent"] == {"echo": "hi hi"} and echoed["isError"] is False
    for name in ("demo.nope", "demo.boom"):
        failed = result_of(await compare(pair, tool(name), took="tools/call"))
        assert failed["isError"] is True
        assert "/etc/passwd" not in json.dumps(failed)
    read = result_of(
        await compare(pair, post("resources/read", {"uri": "test://direct/items/7"}), took="resources/read")
    )
    assert json.loads(read["contents"][0]["text"]) == {"id": "7", "label": "item 7"}
    done = result_of(
        await compare(
            pair,
            post(
                "completion/complete",
                {
                    "ref": {"type": "ref/resource", "uri": "test://direct/items/{id}"},
                    "argument": {"name": "id", "value": "al"},
                },
            ),
            took="completion/complete",
        )
    )
    assert done["completion"]["values"] == ["alpha", "alps"]


# -- errors -------------------------------------------------------------------------------------

ECHO = tool("demo.echo", {"text": "hi"})
LIST = post("tools/list")


def error_case(request: Post, status: int, code: int | None, took: str | None, id: str) -> Any:
    return pytest.param(request, status, code, took, id=id)


ERRORS = [
    error_case(ECHO.with_headers(content_type=None), 400, None, "tools/call", "content-type-missing"),
    error_case(ECHO.with_headers(content_type="text/plain"), 400, None, "tools/call", "content-type-text/plain"),
    error_case(ECHO.with_headers(accept="application/json"), 406, None, "tools/call", "accept-json-only"),
    error_case(ECHO.with_headers(accept="text/event-stream"), 406, None, "tools/call", "accept-sse-only"),
    error_case(ECHO.with_headers(accept=""), 406, None, "tools/call", "accept-empty"),
    error_case(ECHO.with_headers(accept="*/*"), 200, None, "tools/call", "accept-anything"),
    error_case(ECHO.with_headers(accept="application/*, text/*;q=0.5"), 200, None, "tools/call", "accept-wildcards"),
    error_case(tool("demo.echo", {"text": "hi"}, meta=None), 400, INVALID_PARAMS, "tools/call", "meta-missing"),
    error_case(
        tool("demo.echo", {"text": "hi"}, meta={"io.modelcontextprotocol/protocolVersion": MODERN}),
        400,
        INVALID_PARAMS,
        "tools/call",
        "meta-without-capabilities",
    ),
    error_case(
        tool(
            "demo.echo", {"text": "hi"}, meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
        ),
        400,
        HEADER_MISMATCH,
        "tools/call",
        "version-header-differs-from-body",
    ),
    error_case(ECHO.with_headers(mcp_method="tools/list"), 400, HEADER_MISMATCH, "tools/call", "mcp-method-differs"),
    error_case(ECHO.with_headers(mcp_method=None), 400, HEADER_MISMATCH, "tools/call", "mcp-method-missing"),
    error_case(ECHO.with_headers(mcp_name="demo.boom"), 400, HEADER_MISMATCH, "tools/call", "mcp-name-differs"),
    error_case(ECHO.with_headers(mcp_name=None), 400, HEADER_MISMATCH, "tools/call", "mcp-name-missing"),
    error_case(
        ECHO.with_headers(mcp_name="=?base64?ZGVtby5lY2hv?="), 200, None, "tools/call", "mcp-name-base64-matching"
    ),
    error_case(
        post("prompts/get", {"name": "test_simple_prompt"}).with_headers(mcp_name="other"),
        400,
        HEADER_MISMATCH,
        "prompts/get",
        "mcp-name-differs-prompts/get",
    ),
    error_case(
        post("resources/read", {"uri": "docs://demo.echo"}).with_headers(mcp_name="docs://demo.boom"),
        400,
        HEADER_MISMATCH,
        "resources/read",
        "mcp-name-differs-resources/read",
    ),
    error_case(
        tool(
            "demo.echo", {"text": "hi"}, meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        ),
        400,
        HEADER_MISMATCH,
        "tools/call",
        "unsupported-version-in-body-only",
    ),
    error_case(
        tool(
            "demo.echo",
            {"text": "hi"},
            version="2099-01-01",
            meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
        ),
        400,
        UNSUPPORTED_VERSION,
        "tools/call",
        "unsupported-version",
    ),
    error_case(post("tools/call", {"arguments": {}}), 400, INVALID_PARAMS, "tools/call", "tools/call-without-name"),
    error_case(post("tools/call", {"name": 7}), 400, HEADER_MISMATCH, "tools/call", "tools/call-name-not-a-string"),
    error_case(post("prompts/get", {}), 400, INVALID_PARAMS, "prompts/get", "prompts/get-without-name"),
    error_case(post("tools/list", {"cursor": 5}), 400, INVALID_PARAMS, "tools/list", "tools/list-cursor-not-a-string"),
    error_case(
        post("resources/read", {"uri": "test://nowhere"}), 400, INVALID_PARAMS, "resources/read", "resource-not-found"
    ),
    error_case(
        post("resources/read", {"uri": "test://direct/broken"}), 200, INTERNAL_ERROR, "resources/read", "resource-fails"
    ),
    error_case(post("prompts/get", {"name": "nope"}), 400, INVALID_PARAMS, "prompts/get", "prompt-not-found"),
    error_case(
        post("prompts/get", {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        400,
        INVALID_PARAMS,
        "prompts/get",
        "prompt-argument-missing",
    ),
    error_case(tool("demo.ask"), 200, None, "tools/call", "elicitation-undeclared"),
    error_case(tool("dp.sampling"), 400, MISSING_CAPABILITY, "tools/call", "missing-client-capability"),
    error_case(
        tool("geo.routed", {"region": "eu", "text": "hi"}).with_headers(mcp_param_region="eu"),
        200,
        None,
        "tools/call",
        "mcp-param-matching",
    ),
    error_case(
        tool("geo.routed", {"region": "eu", "text": "hi"}).with_headers(mcp_param_region="us"),
        400,
        HEADER_MISMATCH,
        "tools/call",
        "mcp-param-differs",
    ),
    error_case(
        tool("geo.routed", {"region": "eu", "text": "hi"}), 400, HEADER_MISMATCH, "tools/call", "mcp-param-missing"
    ),
    error_case(
        tool("geo.routed").with_headers(mcp_param_region="eu"), 400, HEADER_MISMATCH, "tools/call", "mcp-param-extra"
    ),
    error_case(
        tool("demo.echo", {"text": "hi"}).with_headers(mcp_param_region="eu"),
        200,
        None,
        "tools/call",
        "mcp-param-undeclared",
    ),
    # Odd but valid envelopes, taken by the direct path and answered as the SDK answers them.
    error_case(
        Post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(), LIST.headers),
        400,
        INVALID_PARAMS,
        "tools/list",
        "params-absent",
    ),
    error_case(
        Post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": None}).encode(), LIST.headers),
        400,
        INVALID_PARAMS,
        "tools/list",
        "params-null",
    ),
    error_case(tool("demo.echo", {"text": "big id"}, request_id=2**70), 200, None, "tools/call", "id-beyond-64-bits"),
    error_case(tool("demo.echo", {"text": "zero"}, request_id=0), 200, None, "tools/call", "id-zero"),
    error_case(tool("demo.echo", {"text": "neg"}, request_id=-5), 200, None, "tools/call", "id-negative"),
    error_case(
        Post(ECHO.body.replace(b'"text": "hi"', b'"text": NaN'), ECHO.headers), 200, None, "tools/call", "nan-argument"
    ),
    error_case(
        Post(ECHO.body.replace(b'"id": 1', b'"id": 9, "id": 1'), ECHO.headers),
        200,
        None,
        "tools/call",
        "duplicate-keys",
    ),
    error_case(
        Post(ECHO.body.replace(b'"jsonrpc": "2.0"', b'"jsonrpc": "2.0", "extra": [1]'), ECHO.headers),
        200,
        None,
        "tools/call",
        "extra-member",
    ),
    error_case(
        ECHO.with_headers(content_type="application/json; charset=utf-8"),
        200,
        None,
        "tools/call",
        "content-type-charset",
    ),
    error_case(
        post("tools/call", {"name": "demo.echo", "arguments": [1]}), 400, INVALID_PARAMS, "tools/call", "args-list"
    ),
    error_case(
        post("tools/call", {"name": "geo.routed", "arguments": None}).with_headers(mcp_param_region="eu"),
        400,
        HEADER_MISMATCH,
        "tools/call",
        "args-null-with-param-header",
    ),
    error_case(
        tool("demo.progress", {"values": [1]}, meta={**MODERN_META, "progressToken": True}),
        200,
        None,
        "tools/call",
        "progress-token-a-bool",
    ),
    error_case(
        tool("demo.progress", {"values": [1]}, meta={**MODERN_META, "progressToken": None}),
        400,
        INVALID_PARAMS,
        "tools/call",
        "progress-token-null",
    ),
    error_case(tool("demo.log", meta={**MODERN_META, "extra": 1}), 200, None, "tools/call", "log-without-level"),
    error_case(post("tools/list", {"cursor": "bogus"}), 200, None, "tools/list", "tools/list-unknown-cursor"),
    error_case(post("tools/list").with_headers(mcp_method="Tools/List"), 400, HEADER_MISMATCH, "tools/list", "case"),
    error_case(
        tool("demo.echo", {"text": "hi"}, meta={**MODERN_META, "io.modelcontextprotocol/clientInfo": "me"}),
        400,
        INVALID_PARAMS,
        "tools/call",
        "client-info-not-an-object",
    ),
    # Answered in front of both paths: the direct path never sees them.
    error_case(
        Post(ECHO.body.replace(b'"id": 1', b'"id": {"no": 1}'), ECHO.headers), 400, INVALID_REQUEST, None, "bad-id"
    ),
]


@pytest.mark.parametrize(("request_", "status", "code", "took"), ERRORS)
async def test_refusals_are_answered_alike(
    pair: Pair, request_: Post, status: int, code: int | None, took: str | None
) -> None:
    answer = await compare(pair, request_, took=took)
    assert answer.status == status, answer
    if code is not None:
        assert answer.json()["error"]["code"] == code, answer
    elif status == 200:
        assert "result" in answer.json()


async def test_a_duplicated_routing_header_is_refused_in_front_of_both(pair: Pair) -> None:
    headers = [*ECHO.headers.items(), ("mcp-method", "tools/call")]
    answers = []
    for served in pair.both:
        before = await counters(pair, served)
        response = await pair.http.post(f"{served.url}/mcp", content=ECHO.body, headers=headers)
        answers.append(answer_of(response))
        assert direct_counts(moved(before, await counters(pair, served))) == {}
    assert answers[0] == answers[1]
    assert answers[0].status == 400 and answers[0].json()["error"]["code"] == HEADER_MISMATCH


# -- input-required rounds --------------------------------------------------------------------

ELICITING_META = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def state_of(response: httpx.Response) -> tuple[str, str]:
    """The sealed ``requestState`` of a first round, and the key of its one question."""
    result = response.json()["result"]
    assert result["resultType"] == "input_required", result
    [key] = result["inputRequests"]
    return result["requestState"], key


def tampered(state: str) -> str:
    """The state with one character of its sealed part changed."""
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


async def test_input_required_rounds_are_answered_alike(pair: Pair, tmp_path: Path) -> None:
    marker = tmp_path / "purged"
    arguments = {"marker": str(marker)}
    first = tool("demo.purge", arguments, meta=ELICITING_META)
    asked = result_of(await compare(pair, first, took="tools/call"))
    assert asked["resultType"] == "input_required" and asked["requestState"] == "<sealed>"
    assert not marker.exists()

    states = [state_of(await send(pair, served, first)) for served in pair.both]

    def round_two(state: str, key: str) -> Post:
        answers = {key: {"action": "accept", "content": {"approve": True}}}
        params = {"name": "demo.purge", "arguments": arguments, "inputResponses": answers, "requestState": state}
        return post("tools/call", params, meta=ELICITING_META)

    refused = await compare(
        pair,
        round_two(tampered(states[0][0]), states[0][1]),
        round_two(tampered(states[1][0]), states[1][1]),
        took="tools/call",
    )
    assert refused.status == 400 and refused.json()["error"]["code"] == INVALID_PARAMS
    assert not marker.exists()

    done = result_of(await compare(pair, round_two(*states[0]), round_two(*states[1]), took="tools/call"))
    assert done["isError"] is False and done["structuredContent"] == {"done": True}
    assert marker.read_text() == "ran"


async def test_prompt_input_rounds_are_answered_alike(pair: Pair) -> None:
    first = post("prompts/get", {"name": "test_input_required_result_prompt"}, meta=ELICITING_META)
    asked = result_of(await compare(pair, first, took="prompts/get"))
    assert asked["resultType"] == "input_required"
    states = [state_of(await send(pair, served, first)) for served in pair.both]

    def round_two(state: str, key: str) -> Post:
        answers = {key: {"action": "accept", "content": {"context": "release notes"}}}
        params = {"name": "test_input_required_result_prompt", "inputResponses": answers, "requestState": state}
        return post("prompts/get", params, meta=ELICITING_META)

    rendered = result_of(await compare(pair, round_two(*states[0]), round_two(*states[1]), took="prompts/get"))
    assert rendered["messages"][0]["content"]["text"] == "Use this context: release notes"


# -- requests the SDK answers on both servers -----------------------------------------------------

PROGRESS = {**MODERN_META, "progressToken": "p-1"}
LOGGING = {**MODERN_META, "io.modelcontextprotocol/logLevel": "debug"}


def raw(body: Any, headers: Mapping[str, str] = ECHO.headers) -> Post:
    return Post(body if isinstance(body, bytes) else json.dumps(body).encode(), headers)


FALLBACKS = [
    pytest.param(tool("demo.progress", {"values": [1, 2, 3], "total": 3}, meta=PROGRESS), 200, id="progress-token"),
    pytest.param(tool("demo.log", meta=LOGGING), 200, id="log-level"),
    pytest.param(
        tool("demo.echo", {"text": "x"}, meta={**MODERN_META, "io.modelcontextprotocol/logLevel": "loud"}),
        400,
        id="log-level-invalid",
    ),
    pytest.param(post("tools/frobnicate"), 404, id="unknown-method"),
    pytest.param(post("ping"), 404, id="ping"),
    pytest.param(post("initialize"), 404, id="initialize"),
    pytest.param(post("logging/setLevel", {"level": "info"}), 404, id="logging/setLevel"),
    pytest.param(post("resources/subscribe", {"uri": "docs://demo.echo"}), 404, id="resources/subscribe"),
    pytest.param(
        raw({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}), 202, id="note"
    ),
    pytest.param(raw([json.loads(ECHO.body), json.loads(ECHO.body)]), 400, id="batch"),
    pytest.param(raw(b'{"jsonrpc": "2.0", "id": 1, "method": '), 400, id="parse-error"),
    pytest.param(
        raw({"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}}), 400, id="v1"
    ),
    pytest.param(raw({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}), 400, id="params-a-list"),
    pytest.param(ECHO.with_headers(mcp_protocol_version="2025-11-25"), 400, id="handshake-era-version"),
]


@pytest.mark.parametrize(("request_", "status"), FALLBACKS)
async def test_what_the_sdk_answers_is_the_same_on_both(pair: Pair, request_: Post, status: int) -> None:
    answer = await compare(pair, request_, took=None)
    assert answer.status == status, answer


async def test_fallbacks_carry_what_they_are_for(pair: Pair) -> None:
    """Progress and log notifications stream before the result; bad envelopes get the SDK's codes."""
    progress = await compare(pair, tool("demo.progress", {"values": [1, 2], "total": 2}, meta=PROGRESS), took=None)
    assert progress.header("content-type") == "text/event-stream"
    events = [json.loads(frame.removeprefix(b"event: message\r\ndata: ")) for frame in frames(progress.body)]
    assert [event.get("method") for event in events] == ["notifications/progress"] * 2 + [None]
    assert events[-1]["result"]["structuredContent"] == {"reported": 2}
    logs = await compare(pair, tool("demo.log", meta=LOGGING), took=None)
    assert logs.body.count(b'"method":"notifications/message"') == 4
    for request_, status, code in [
        (post("ping"), 404, METHOD_NOT_FOUND),
        (raw([json.loads(ECHO.body)]), 400, INVALID_REQUEST),
        (raw(b"{"), 400, PARSE_ERROR),
    ]:
        answer = await compare(pair, request_, took=None)
        assert (answer.status, answer.json()["error"]["code"]) == (status, code)


def frames(body: bytes) -> list[bytes]:
    return [frame for frame in body.split(b"\r\n\r\n") if frame]


# -- JSON responses (json_response=True) ------------------------------------------------------


async def test_json_response_mode_is_answered_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_ping_interval(monkeypatch)
    async with serving_pair(json_response=True) as pair:
        for request_, took in [
            (post("tools/list"), "tools/list"),
            (ECHO, "tools/call"),
            (ECHO.with_headers(accept="application/json"), "tools/call"),  # no SSE needed in JSON mode
            (post("resources/read", {"uri": "docs://demo.echo"}), "resources/read"),
            (tool("demo.wait", {"seconds": SLOW_SECONDS}), "tools/call"),  # past the ping interval: still JSON
        ]:
            answer = await compare(pair, request_, took=took)
            assert answer.header("content-type") == "application/json"
            assert answer.json()["result"]["resultType"] == "complete"
        refused = await compare(pair, ECHO.with_headers(accept="text/event-stream"), took="tools/call")
        assert refused.status == 406
        dropped = await compare(pair, tool("demo.log", meta=LOGGING), took=None)  # the SDK's: notifications dropped
        assert dropped.header("content-type") == "application/json"


# -- what a handler does besides answering -------------------------------------------------------

NOTIFY_FIRST = "notify first"
RAISE = "middleware raises"
ANSWERS_ITSELF: dict[str, Any] = {
    "answer nan": {"ratio": math.nan, "limit": math.inf},
    "answer a date": {"when": datetime(2026, 1, 2, 3, 4, 5)},
}
"""Structured results a middleware answers with itself, values JSON has no literal for (the SDK's
pydantic dump writes ``null`` and an ISO 8601 string)."""


async def surprising(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Server middleware: a request-scoped notification no rule foresaw, or a crash outside any handler."""
    arguments = (ctx.params or {}).get("arguments") or {}
    text = arguments.get("text") if isinstance(arguments, Mapping) else None
    if text == NOTIFY_FIRST:
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
    if text == RAISE:
        raise RuntimeError("middleware broke: secret detail")
    if text in ANSWERS_ITSELF:  # short-circuits: the SDK's kernel leaves such a result as it is
        return {"content": [], "isError": False, "structuredContent": ANSWERS_ITSELF[text], "resultType": "complete"}
    return await call_next(ctx)


def surprising_bridge(**settings: Any) -> Bridge:
    bridge = bridge_of(**settings)
    bridge.server.middleware.insert(0, surprising)
    return bridge


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_surprise_notification_and_a_crash_are_answered_alike(json_response: bool) -> None:
    async with serving_pair(surprising_bridge, json_response=json_response) as pair:
        notified = await compare(pair, tool("demo.echo", {"text": NOTIFY_FIRST}), took="tools/call")
        if json_response:  # nowhere to send it: dropped, as the SDK's JSON branch drops it
            assert notified.header("content-type") == "application/json"
            assert result_of(notified)["structuredContent"] == {"echo": NOTIFY_FIRST}
        else:  # it commits the stream: the notification, then the result
            assert notified.header("content-type") == "text/event-stream"
            first, last = (
                json.loads(frame.removeprefix(b"event: message\r\ndata: ")) for frame in frames(notified.body)
            )
            assert first["method"] == "notifications/tools/list_changed"
            assert last["result"]["structuredContent"] == {"echo": NOTIFY_FIRST}
        crashed = await compare(pair, tool("demo.echo", {"text": RAISE}), took="tools/call")
        assert (crashed.status, crashed.json()["error"]) == (
            200,
            {"code": INTERNAL_ERROR, "message": "Internal server error"},
        )


@pytest.mark.parametrize("text", list(ANSWERS_ITSELF), ids=["nan-and-infinity", "datetime"])
async def test_a_result_a_middleware_answers_itself_is_written_as_the_sdk_writes_it(text: str) -> None:
    """``serve_one`` leaves a short-circuiting middleware's result unsieved; the SDK writes the reply
    through pydantic's JSON mode (NaN and infinities as ``null``, a datetime as ISO 8601)."""
    async with serving_pair(surprising_bridge) as pair:
        answer = await compare(pair, tool("demo.echo", {"text": text}), took="tools/call")
    assert answer.status == 200, answer

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON (RFC 8259)")

    structured = json.loads(answer.body, parse_constant=no_constants)["result"]["structuredContent"]
    assert structured in ({"ratio": None, "limit": None}, {"when": "2026-01-02T03:04:05"})


async def test_a_registry_changing_under_calls_is_answered_alike() -> None:
    """Live lists: a call adds a tool, the next list shows it (no stale cache on either path), it is removed."""
    async with serving_pair(dynamic=True) as pair:
        listed = result_of(await compare(pair, LIST, took="tools/list"))
        assert (listed["ttlMs"], "demo.added" in {entry["name"] for entry in listed["tools"]}) == (0, False)
        await compare(pair, tool("demo.register", {"text": "add"}), took="tools/call")
        listed = result_of(await compare(pair, LIST, took="tools/list"))
        assert "demo.added" in {entry["name"] for entry in listed["tools"]}
        added = result_of(await compare(pair, tool("demo.added", {"text": "new"}), took="tools/call"))
        assert added["structuredContent"] == {"echo": "new"}
        await compare(pair, tool("demo.register", {"text": "remove"}), took="tools/call")
        gone = result_of(await compare(pair, tool("demo.added", {"text": "new"}), took="tools/call"))
        assert gone["isError"] is True


# -- the SSE commit after the ping interval ------------------------------------------------------


def patch_ping_interval(monkeypatch: pytest.MonkeyPatch, seconds: float = PING_SECONDS) -> None:
    monkeypatch.setattr(sdk_internals, "SSE_PING_INTERVAL", seconds)
    monkeypatch.setattr(direct_module, "SSE_PING_INTERVAL", seconds)
    monkeypatch.setattr(sdk_modern, "_SSE_PING_INTERVAL", seconds)


@dataclass(frozen=True)
class Stream:
    """A committed event stream: its status and headers, how many pings, and the final event's message."""

    status: int
    headers: tuple[tuple[str, str], ...]
    pings: int
    final: Any


def stream_of(response: httpx.Response) -> Stream:
    *pings, final = frames(response.content)
    assert pings and set(pings) == {b": ping"}, response.content
    assert final.startswith(b"event: message\r\ndata: "), final
    message = json.loads(final.removeprefix(b"event: message\r\ndata: "))
    headers = tuple((key, value) for key, value in response.headers.multi_items() if key != "date")
    return Stream(response.status_code, headers, len(pings), message)


@pytest.mark.parametrize(
    ("request_", "took"),
    [
        pytest.param(tool("demo.wait", {"seconds": SLOW_SECONDS}), "tools/call", id="result"),
        pytest.param(post("resources/read", {"uri": "test://direct/late-broken"}), "resources/read", id="late-error"),
    ],
)
async def test_a_silent_call_commits_to_sse_with_pings_alike(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, request_: Post, took: str
) -> None:
    patch_ping_interval(monkeypatch)
    before = await counters(pair, pair.direct)
    on, off = [stream_of(await send(pair, served, request_)) for served in pair.both]
    assert direct_counts(moved(before, await counters(pair, pair.direct))) == {took: 1.0}
    assert (on.status, on.headers, on.final) == (off.status, off.headers, off.final)  # ping counts are the clock's
    assert on.status == 200
    assert [(key, value) for key, value in on.headers if key != "server"][:4] == [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache, no-transform"),
        ("connection", "keep-alive"),
        ("x-accel-buffering", "no"),
    ]
    if took == "tools/call":
        assert on.final["result"]["structuredContent"] == {"echo": "done"}
    else:  # after the commit an error travels in the stream, with HTTP 200
        assert on.final["error"]["code"] == INTERNAL_ERROR


# -- disconnects and concurrency --------------------------------------------------------------


async def wait_until(check: Any, what: str, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)
    assert check(), what


LEAVERS = 5


@pytest.mark.parametrize("which", ["direct", "sdk"])
async def test_a_client_leaving_cancels_the_module_and_loses_nothing(pair: Pair, tmp_path: Path, which: str) -> None:
    """Closing the connection mid-call (the 2026-07-28 way to cancel): the module unwinds with its token
    set, never finishes, is counted once as cancelled, and leaves no task behind; the server carries on."""
    served = pair.direct if which == "direct" else pair.sdk
    router = served.bridge.router
    outcomes: list[str] = []

    def observe(name: str, kind: str, _seconds: float) -> None:
        if name == "demo.sleep":
            outcomes.append(kind)

    router.observers.append(observe)
    before = await counters(pair, served)
    baseline = len(asyncio.all_tasks())
    try:
        for index in range(LEAVERS):
            marker = tmp_path / f"sleep{index}"
            async with httpx.AsyncClient(timeout=60) as leaving:
                request_ = tool("demo.sleep", {"marker": str(marker), "seconds": 30})
                call = asyncio.create_task(
                    leaving.post(f"{served.url}/mcp", content=request_.body, headers=dict(request_.headers))
                )
                await wait_until(lambda: router.in_flight == 1, "the call is running")
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
            cancelled = marker.with_name(f"{marker.name}.cancelled")
            await wait_until(cancelled.exists, "the module was cancelled")
            assert cancelled.read_text() == "True"  # its CancelToken was set when it unwound
            await wait_until(lambda: router.in_flight == 0, "the call ended")
        await wait_until(lambda: len(asyncio.all_tasks()) <= baseline, "no task outlives its call")
    finally:
        router.observers.remove(observe)
    assert outcomes == ["cancelled"] * LEAVERS
    assert not [path for path in tmp_path.iterdir() if not path.name.endswith(".cancelled")]  # none finished
    delta = moved(before, await counters(pair, served))
    assert direct_counts(delta) == ({"tools/call": LEAVERS} if which == "direct" else {})
    assert delta[("apcore_mcp_tool_calls_total", (("outcome", "cancelled"), ("tool", "demo.sleep")))] == LEAVERS
    after = answer_of(await send(pair, served, ECHO))
    assert result_of(after)["structuredContent"] == {"echo": "hi"}


@pytest.mark.parametrize("which", ["direct", "sdk"])
async def test_a_client_leaving_a_committed_stream_cancels_the_call(
    pair: Pair, tmp_path: Path, which: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the ping interval the answer is an event stream: leaving it mid-ping cancels the call just the same,
    and the pinging stops without an error (nothing logged, no task left)."""
    patch_ping_interval(monkeypatch, 0.05)
    served = pair.direct if which == "direct" else pair.sdk
    router = served.bridge.router
    marker = tmp_path / "sleep"
    request_ = tool("demo.sleep", {"marker": str(marker), "seconds": 30})
    baseline = len(asyncio.all_tasks())
    async with (
        httpx.AsyncClient(timeout=60) as leaving,
        leaving.stream("POST", f"{served.url}/mcp", content=request_.body, headers=dict(request_.headers)) as stream,
    ):
        assert stream.headers["content-type"] == "text/event-stream"
        pings = 0
        async for chunk in stream.aiter_bytes():
            pings += chunk.count(b": ping")
            if pings >= 3:
                break
    cancelled = marker.with_name("sleep.cancelled")
    await wait_until(cancelled.exists, "the module was cancelled")
    assert cancelled.read_text() == "True" and not marker.exists()
    await wait_until(lambda: router.in_flight == 0, "the call ended")
    await wait_until(lambda: len(asyncio.all_tasks()) <= baseline, "no pinger outlives its stream")
    assert [record.getMessage() for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")] == []


async def test_fifty_concurrent_calls_each_get_their_own_reply(pair: Pair) -> None:
    ids: list[int | str] = [*range(100, 125), *(f"call-{index}" for index in range(25))]
    requests = [tool("demo.echo", {"text": f"text of {request_id}"}, request_id=request_id) for request_id in ids]
    before = await counters(pair, pair.direct)
    on, off = [await asyncio.gather(*(send(pair, served, request_) for request_ in requests)) for served in pair.both]
    assert direct_counts(moved(before, await counters(pair, pair.direct))) == {"tools/call": 50.0}
    for request_id, direct_reply, sdk_reply in zip(ids, on, off, strict=True):
        assert answer_of(direct_reply) == answer_of(sdk_reply)
        message = direct_reply.json()
        assert message["id"] == request_id
        assert message["result"]["structuredContent"] == {"echo": f"text of {request_id}"}


# -- what the direct path is built on ------------------------------------------------------------


async def test_every_registered_request_method_is_direct_or_the_sdks() -> None:
    """A new handler forces a decision: answer it directly, or name it here as the SDK's."""
    bridge = bridge_of(dynamic=True)  # every handler: prompts, subscriptions/listen
    registered = set(bridge.server._request_handlers)
    assert registered == DIRECT_METHODS | SDK_ONLY, registered ^ (DIRECT_METHODS | SDK_ONLY)
    assert not DIRECT_METHODS & SDK_ONLY


# -- per-caller limits ----------------------------------------------------------------------------


async def test_a_rate_limited_call_is_answered_alike() -> None:
    async with serving_pair(rate_limit=0.01, rate_burst=1) as pair:
        first = await compare(pair, ECHO, took="tools/call")
        assert result_of(first)["isError"] is False
        limited = await compare(pair, ECHO, took="tools/call")
        error = limited.json()["error"]
        assert (limited.status, error["code"], error["data"]["retryAfter"]) == (200, RATE_LIMITED, "<seconds>")
        assert error["message"] == "Rate limit exceeded; retry in <seconds>s"
        assert result_of(await compare(pair, LIST, took="tools/list"))["tools"]  # only calls are limited
