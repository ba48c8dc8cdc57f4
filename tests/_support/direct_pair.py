"""Two servers of one registry side by side, one with the direct path and one without: one
request, two answers, compared (``tests/http/test_direct_path*.py``; the module docstring of
``test_direct_path.py`` says how).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from apcore import Registry
from mcp.server import _streamable_http_modern as sdk_modern
from pydantic import BaseModel

import apcore_mcp.http.direct as direct_module
from apcore_mcp import _sdk as sdk_internals
from apcore_mcp import sample
from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.hostile import MODERN, MODERN_META, samples
from tests._support.modules import Routed, make_executor, make_registry
from tests._support.sessions import REPO, running_http

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


async def module_pair() -> AsyncIterator[Pair]:
    """The pair a test module shares: ``pair = pytest_asyncio.fixture(scope="module", loop_scope="module")(module_pair)``."""
    async with serving_pair() as served:
        yield served


def result_of(answer: Answer) -> dict[str, Any]:
    assert answer.status == 200, answer
    message = answer.json()
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


ECHO = tool("demo.echo", {"text": "hi"})
LIST = post("tools/list")
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


def frames(body: bytes) -> list[bytes]:
    return [frame for frame in body.split(b"\r\n\r\n") if frame]


def patch_ping_interval(monkeypatch: pytest.MonkeyPatch, seconds: float = PING_SECONDS) -> None:
    monkeypatch.setattr(sdk_internals, "SSE_PING_INTERVAL", seconds)
    monkeypatch.setattr(direct_module, "SSE_PING_INTERVAL", seconds)
    monkeypatch.setattr(sdk_modern, "_SSE_PING_INTERVAL", seconds)
