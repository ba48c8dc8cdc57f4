"""Cheap refusals: oversized headers (431), JSON bodies too deep or too wide (400 before parsing),
duplicated MCP headers (400 naming them), and one Host/Origin rule on every route."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.deploy import clean_env, log_tail, running
from tests._support.hostile import (
    ACCEPT,
    HANDSHAKE,
    INIT,
    metric,
    metrics_text,
    modern_headers,
    open_session,
    serving,
    session_headers,
    tool_call,
)
from tests._support.processes import wait_ok

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "extensions"


# -- request heads ------------------------------------------------------------------------------


def head(size: int, path: str = "/health") -> bytes:
    """A GET request whose head (request line and header lines) is about ``size`` bytes."""
    start = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    pads, rest = divmod(max(size - len(start), 0), 1024)
    lines = [f"X-Pad-{i:04}: ".encode() + b"a" * (1024 - 14) + b"\r\n" for i in range(pads)]
    return start + b"".join(lines) + b"X: " + b"a" * max(rest - 5, 0) + b"\r\n\r\n"


async def exchange(url: str, request: bytes, *, piece: int | None = None, pause: float = 0.02) -> bytes:
    """Send ``request`` on a raw socket (whole, or ``piece`` bytes at a time) and read one answer.

    Like a browser, it stops sending once the answer has come (an early refusal).
    """
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))

    async def answer() -> bytes:
        # Its head, then as many body bytes as it declares (the server may keep the connection).
        head = await reader.readuntil(b"\r\n\r\n")
        lengths = [line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        return head + await reader.readexactly(int(lengths[0]) if lengths else 0)

    reading = asyncio.create_task(answer())
    try:
        pieces = [request] if piece is None else [request[i : i + piece] for i in range(0, len(request), piece)]
        with contextlib.suppress(ConnectionError):
            for part in pieces:
                if reading.done():
                    break
                writer.write(part)
                await writer.drain()
                if piece is not None:
                    await asyncio.sleep(pause)
        return await asyncio.wait_for(reading, 10)
    finally:
        reading.cancel()
        writer.close()


def status_and_json(answer: bytes) -> tuple[int, Any]:
    """The status and the body (parsed when it is JSON)."""
    start, _, body = answer.partition(b"\r\n\r\n")
    try:
        return int(start.split(b" ")[1]), json.loads(body)
    except ValueError:
        return int(start.split(b" ")[1]), body.decode(errors="replace")


PARSERS = pytest.mark.parametrize("http_parser", ["h11", "httptools"])  # each timed protocol


@PARSERS
async def test_headers_over_the_limit_are_431_whole_or_trickled(http_parser: str) -> None:
    async with serving(http_parser=http_parser) as (url, _):
        refusal = (431, {"error": "Request headers exceed 16384 bytes"})
        assert (
            status_and_json(await exchange(url, head(70_000))) == refusal
        )  # was 200: h11 checks incomplete heads only
        assert status_and_json(await exchange(url, head(70_000), piece=4096)) == refusal  # was 400, text/plain
        async with httpx.AsyncClient() as http:  # closed: an open client's socket outlives the test
            assert (await http.get(f"{url}/health")).status_code == 200
        text = await metrics_text(url)
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="headers_too_large") == 2


@PARSERS
async def test_heads_within_the_limit_pass_whole_or_trickled(http_parser: str) -> None:
    async with serving(http_parser=http_parser) as (url, _):
        assert status_and_json(await exchange(url, head(16_000)))[0] == 200
    async with serving(max_header_bytes=32_768, http_parser=http_parser) as (url, _):
        # Past h11's own 16 KiB for an incomplete head (was 400): the setting rules, not h11's default.
        assert status_and_json(await exchange(url, head(30_000), piece=2048))[0] == 200
        assert status_and_json(await exchange(url, head(40_000)))[0] == 431


@contextlib.contextmanager
def process_server(way: str, tmp_path: Path) -> Iterator[str]:
    """The examples served by our CLI (``python -m apcore_mcp``) or by plain uvicorn (the command of docs/service.md)."""
    port = free_port()
    env = {**clean_env(), "APCORE_MCP_EXTENSIONS_DIR": str(EXAMPLES)}
    if way.startswith("cli"):  # cli: the default parser (httptools, installed here); cli-h11: h11
        cmd = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", str(EXAMPLES), "--transport", "streamable-http"]
        cmd += ["--port", str(port), *(["--http-parser", "h11"] if way == "cli-h11" else [])]
    else:  # uvicorn's own h11 protocol: the app's check is the only one
        cmd = [sys.executable, "-m", "uvicorn", "app:create_app", "--factory", "--port", str(port)]
        cmd += ["--no-proxy-headers", "--http", "h11"]
    log = tmp_path / f"{way}.log"
    with running(cmd, log, env=env) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_ok(f"{url}/health", proc, details=lambda: log_tail(log))
        yield url


@pytest.mark.parametrize("way", ["cli", "cli-h11", "uvicorn"])
async def test_every_way_of_running_answers_431_to_70_kb_of_headers(way: str, tmp_path: Path) -> None:
    refusal = (431, {"error": "Request headers exceed 16384 bytes"})
    with process_server(way, tmp_path) as url:
        answer = status_and_json(await exchange(url, head(70_000)))  # was 200 both ways
        if way == "uvicorn" and answer[0] == 400:
            # Plain h11 refuses an incomplete head past its own 16 KiB with 400 before the app sees
            # it; whether the 70 KB arrive in one read or several is the kernel's and the loop's call.
            assert answer == (400, ""), answer
        else:
            assert answer == refusal
        assert status_and_json(await exchange(url, head(8_000)))[0] == 200


# -- duplicated MCP headers -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Mcp-Name", "Mcp-Method", "Mcp-Session-Id", "MCP-Protocol-Version"])
async def test_a_duplicated_mcp_header_is_a_400_naming_it(name: str) -> None:
    async with serving() as (url, _), httpx.AsyncClient() as http:
        session = await open_session(http, url)
        values = {"Mcp-Name": "hostile.echo", "Mcp-Method": "tools/call", "Mcp-Session-Id": session}
        values["MCP-Protocol-Version"] = HANDSHAKE
        headers = [*session_headers(session).items(), (name, values[name]), (name, values[name])]
        body = tool_call(1, "hostile.echo", {})
        response = await http.post(f"{url}/mcp", json=body, headers=headers)  # was 200, first copy read
        # The attack's case: no session id yet, and a duplicated header: was "Missing session ID".
        no_session = [(key, value) for key, value in headers if key.lower() != "mcp-session-id"]
        if name == "Mcp-Session-Id":
            no_session += [(name, session), (name, session)]
        unsessioned = await http.post(f"{url}/mcp", json=body, headers=no_session)
        modern = list(modern_headers("tools/call", "hostile.echo").items())
        modern += [(name, values[name])] * (1 if any(key.lower() == name.lower() for key, _ in modern) else 2)
        modern_answer = await http.post(
            f"{url}/mcp", json=tool_call(2, "hostile.echo", {}, modern=True), headers=modern
        )
    for answer in (response, unsessioned):
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == {"code": -32600, "message": f"{name} header appears more than once"}
    assert modern_answer.status_code == 400, modern_answer.text  # the SDK's code on the 2026-07-28 path, kept
    assert modern_answer.json()["error"]["code"] == -32020
    assert name in modern_answer.json()["error"]["message"]


# -- one Host/Origin rule on every route ------------------------------------------------------------

ROUTES = [
    ("POST", "/mcp"),
    ("GET", "/sse"),
    ("POST", "/messages/"),
    ("GET", "/health"),
    ("GET", "/ready"),
    ("GET", "/metrics"),
    ("GET", "/openai/tools"),
    ("GET", "/explorer/"),
    ("POST", "/explorer/mcp"),
]


async def status_of(http: httpx.AsyncClient, method: str, url: str, headers: dict[str, str]) -> int:
    """The status only (an SSE stream is left unread)."""
    body = json.dumps(INIT).encode() if method == "POST" else None
    async with http.stream(method, url, content=body, headers={**ACCEPT, **headers}) as response:
        return response.status_code


@pytest.mark.parametrize(
    "origin", ["http://[::1]x", "http://[::1]:80x", "http://localhost:80x", "http://localhost?x", "http://::1"]
)
async def test_a_malformed_origin_is_403_on_every_route(origin: str) -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient(timeout=10) as http:
        statuses = {path: await status_of(http, method, f"{url}{path}", {"Origin": origin}) for method, path in ROUTES}
    assert statuses == {path: 403 for _, path in ROUTES}  # /mcp alone refused "http://[::1]x" before


@pytest.mark.parametrize("host", ["[::1]x", "localhost:80x", "::1"])
async def test_a_malformed_host_is_421_on_every_route(host: str) -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient(timeout=10) as http:
        statuses = {path: await status_of(http, method, f"{url}{path}", {"Host": host}) for method, path in ROUTES}
    assert statuses == {path: 421 for _, path in ROUTES}


async def test_an_allowed_origin_passes_on_every_route_whatever_its_case_or_trailing_slash() -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient(timeout=10) as http:
        # No port: the SDK's own check (exact, or "http://localhost:" and a port) refused it on /mcp.
        headers = {"Host": "LocalHost", "Origin": "HTTP://LocalHost/"}
        statuses = {path: await status_of(http, method, f"{url}{path}", headers) for method, path in ROUTES}
    assert 403 not in statuses.values(), statuses
    assert statuses["/mcp"] == 200


# -- JSON bounds ----------------------------------------------------------------------------------

BODY_ROUTES = ["/mcp", "/messages/", "/explorer/mcp"]


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def body_for(path: str, arguments_json: str) -> tuple[bytes, dict[str, str]]:
    """``arguments_json`` as a 2026-07-28 tools/call of hostile.echo on ``path``."""
    call = json.dumps(tool_call(1, "hostile.echo", {}, modern=True)).replace('"arguments": {}', '"arguments": %s')
    return (call % arguments_json).encode(), modern_headers("tools/call", "hostile.echo")


async def post(http: httpx.AsyncClient, url: str, path: str, arguments_json: str) -> tuple[httpx.Response, float]:
    content, headers = body_for(path, arguments_json)
    started = time.perf_counter()
    response = await http.post(f"{url}{path}", content=content, headers=headers)
    return response, time.perf_counter() - started


def refusal_message(path: str, response: httpx.Response) -> str:
    """The refusal's words: a JSON-RPC error on the MCP endpoints, ``{"error": ...}`` elsewhere."""
    assert response.status_code == 400, response.text[:300]
    answer = response.json()
    if path.endswith("/mcp"):
        assert (answer["id"], answer["error"]["code"]) == (None, -32600)
        return str(answer["error"]["message"])
    return str(answer["error"])


@pytest.mark.parametrize("path", BODY_ROUTES)
async def test_a_body_with_200000_keys_is_refused_before_parsing(path: str) -> None:
    keys = json.dumps({f"k{i}": i for i in range(200_000)})
    async with (
        serving(explorer=True, allow_execute=True) as (url, _),
        httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=1)) as http,
    ):
        response, seconds = await post(http, url, path, keys)  # took 3-10 s to go through before
        print(f"\n200,000 keys ({len(keys):,} bytes) to {path}: {response.status_code} in {seconds * 1000:.0f} ms")
        assert refusal_message(path, response) == "Request body has more than 100000 JSON keys and elements"
        assert response.headers.get("connection") != "close"  # the body was read: the connection goes on
        assert (await http.get(f"{url}/health")).status_code == 200


@pytest.mark.parametrize("path", BODY_ROUTES)
async def test_a_body_nested_10000_deep_is_refused_and_large_plain_bodies_are_served(path: str) -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient(timeout=60) as http:
        deep, _ = await post(http, url, path, nested(10_000))
        assert refusal_message(path, deep) == "Request body is nested more than 64 levels deep"
        if path == "/messages/":
            return  # no session: what it accepts is the SDK's business
        # 1 MB of commas, colons and brackets in a string, and 5,000 small objects: over the bounds
        # by count, within them in fact.
        wide = json.dumps({"text": ",:{[" * 250_000, "rows": [{"a": [i]} for i in range(5_000)]})
        served, seconds = await post(http, url, path, wide)
        print(f"\n{len(wide):,} bytes within the bounds to {path}: {served.status_code} in {seconds * 1000:.0f} ms")
        assert served.status_code == 200, served.text[:300]
        assert "ok" in served.text


ENVELOPE_ITEMS = 13
"""Keys of a 2026-07-28 tools/call's envelope around its arguments (``jsonrpc``... ``_meta``'s), and "x"."""
ENVELOPE_DEPTH = 2
"""The message and its ``params`` around the arguments."""


@pytest.mark.parametrize("path", ["/mcp", "/explorer/mcp"])
async def test_the_json_bounds_are_the_settings(path: str) -> None:
    async with (
        serving(explorer=True, allow_execute=True, max_json_depth=5, max_json_items=1_000) as (url, _),
        httpx.AsyncClient() as http,
    ):
        counts = [1_000 - ENVELOPE_ITEMS, 1_001 - ENVELOPE_ITEMS]  # 1,000 items in all; then 1,001
        items = [(await post(http, url, path, json.dumps({"x": list(range(n))})))[0] for n in counts]
        depths = [(await post(http, url, path, nested(n)))[0] for n in (5 - ENVELOPE_DEPTH, 6 - ENVELOPE_DEPTH)]
    assert items[0].status_code == depths[0].status_code == 200
    assert refusal_message(path, items[1]) == "Request body has more than 1000 JSON keys and elements"
    assert refusal_message(path, depths[1]) == "Request body is nested more than 5 levels deep"


@pytest.mark.parametrize(("name", "value"), [("max_header_bytes", 1023), ("max_json_depth", 0), ("max_json_items", 0)])
def test_bounds_below_their_minimum_are_setting_errors(name: str, value: int) -> None:
    bound: dict[str, Any] = {name: value}
    with pytest.raises(ValueError, match=name):
        Settings(**bound)


# -- the bound check itself -------------------------------------------------------------------------


def shape(value: Any, depth: int = 0) -> tuple[int, int]:
    """(items, depth) of a parsed JSON value, the plain way."""
    if isinstance(value, dict | list):
        children = list(value.values()) if isinstance(value, dict) else value
        inner = [shape(child, depth + 1) for child in children]
        return len(children) + sum(items for items, _ in inner), max([depth + 1, *(d for _, d in inner)])
    return 0, depth


def random_json(rng: random.Random, depth: int = 0) -> Any:
    tricky = ["a,b", "{[", '"', "\\", '\\"}', ":,]", " \n", "é", ""]
    roll = rng.random()
    if depth < 6 and roll < 0.3:
        return {rng.choice(tricky) + str(i): random_json(rng, depth + 1) for i in range(rng.randrange(4))}
    if depth < 6 and roll < 0.6:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return rng.choice([rng.choice(tricky), 1, None, True, 2.5])


def test_the_bound_check_agrees_with_a_parse_on_tricky_texts() -> None:
    from apcore_mcp._jsonbounds import JsonBounds

    rng = random.Random(15)
    for _ in range(2_000):
        value = random_json(rng)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode()
        items, depth = shape(value)
        for max_depth, max_items in ((depth, items), (depth - 1, items), (depth, items - 1)):
            if max_depth < 0 or max_items < 0:
                continue
            expected = None
            if items > max_items:
                expected = f"has more than {max_items} JSON keys and elements"
            elif depth > max_depth:
                expected = f"is nested more than {max_depth} levels deep"
            assert JsonBounds(max_depth, max_items).excess(text) == expected, text


def test_the_bound_check_is_linear_on_malformed_strings() -> None:
    from apcore_mcp._jsonbounds import JsonBounds

    bounds = JsonBounds(64, 100_000)
    for text in (b'["' + b'\\"' * 2_000_000, b'["' + b'\\",' * 1_000_000 + b"\\", b"[" + b'"' * 3_000_001):
        started = time.perf_counter()
        bounds.excess(text)
        assert time.perf_counter() - started < 2  # quadratic would be minutes
