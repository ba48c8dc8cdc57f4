"""The direct path (``http/direct.py``) answers a 2026-07-28 request exactly as the SDK would.

Two servers of one registry run side by side in this event loop, one with ``direct_path=True``
and one with ``direct_path=False``. Every case sends the same raw POST to both and compares the
status, every response header but ``Date``, and the body bytes (sealed ``requestState`` values
masked: they are random). ``apcore_mcp_direct_requests_total`` on ``/metrics`` says which path
answered: the direct server's counter moves for the requests it takes, the SDK server's never;
the refusal and tool-call counters move alike on both.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import pytest_asyncio
from mcp_types import INVALID_PARAMS, INVALID_REQUEST
from mcp_types.jsonrpc import HEADER_MISMATCH

from tests._support.direct_pair import (
    ECHO,
    INTERNAL_ERROR,
    LIST,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    Pair,
    Post,
    answer_of,
    compare,
    counters,
    direct_counts,
    module_pair,
    moved,
    post,
    result_of,
    tool,
)
from tests._support.hostile import MODERN, MODERN_META

# -- success, one per method ---------------------------------------------------------------------

pytestmark = pytest.mark.asyncio(loop_scope="module")
pair = pytest_asyncio.fixture(scope="module", loop_scope="module")(module_pair)
"""One pair of servers for the whole module: the cases here do not change them."""


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
