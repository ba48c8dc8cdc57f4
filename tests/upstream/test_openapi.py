"""OpenAPI services as tools: a real Starlette API (tests/upstreams/openapi_service.py) on a loopback port,
mounted from an ``mcp.json`` ``openapi`` entry or ``--from-openapi``, called by the SDK client through our server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.client.session import ClientRequestContext

from apcore_mcp.settings import Settings
from apcore_mcp.testing import apcore_server, start_server
from apcore_mcp.upstream.config.parse import UpstreamConfigError, parse_config
from apcore_mcp.upstream.module import JsonSchemaModel
from apcore_mcp.upstream.mount import config_of
from apcore_mcp.upstream.openapi.document import DocumentError, base_url, read_document
from apcore_mcp.upstream.openapi.operations import Operation, OperationError, operations

from tests._support.openapi import SECRET, client, service_in_loop, service_process, shop_bridge, shop_entry
from tests._support.results import text_of
from tests.upstreams.openapi_service import DOCUMENT

REPO = Path(__file__).resolve().parents[2]
EXTENSIONS = REPO / "examples" / "extensions"
YES = types.ElicitResult(action="accept", content={"approve": True})
NO = types.ElicitResult(action="decline")


def by_name(document: dict[str, Any]) -> dict[str, Operation]:
    found = list(operations(document))
    assert not [item for item in found if isinstance(item, OperationError)]
    return {item.name: item for item in found if isinstance(item, Operation)}


# -- the mapping ------------------------------------------------------------------------------------


def test_each_operation_becomes_a_tool_with_its_schema_and_the_method_s_annotations() -> None:
    found = by_name(DOCUMENT)
    assert {"listItems", "createItem", "getItem", "replaceItem", "renameItem", "deleteItem", "whoAmI"} <= set(found)
    listing = found["listItems"].tool
    assert listing.input_schema["properties"]["tag"] == {"type": "array", "items": {"type": "string"}}
    assert "required" not in listing.input_schema
    replace = found["replaceItem"].tool.input_schema
    assert replace["required"] == ["itemId", "body"]  # the path item's parameter, and the required body
    assert replace["properties"]["body"] == DOCUMENT["components"]["schemas"]["NewItem"]  # the $ref inlined
    contract = JsonSchemaModel(replace)
    good: dict[str, Any] = {"itemId": "1", "body": {"name": "pen"}}
    bad: dict[str, Any] = {"itemId": "1", "body": {"price": -1}}
    assert contract.model_validate(good) == good
    with pytest.raises(Exception, match="validation failed"):
        contract.model_validate(bad)
    hints = {name: found[name].tool.annotations for name in ("getItem", "replaceItem", "renameItem", "deleteItem")}
    assert hints["getItem"] is not None and hints["getItem"].read_only_hint and hints["getItem"].idempotent_hint
    assert hints["replaceItem"] is not None and hints["replaceItem"].idempotent_hint
    assert not hints["replaceItem"].destructive_hint and not hints["replaceItem"].read_only_hint
    assert hints["renameItem"] is not None and not hints["renameItem"].idempotent_hint
    assert not hints["renameItem"].destructive_hint
    assert hints["deleteItem"] is not None and hints["deleteItem"].destructive_hint
    assert found["getItem"].tool.description == "One item\n\nThe item and the raw path the request used."


def test_an_openapi_3_0_schema_is_read_as_json_schema_and_bad_refs_leave_the_operation_out() -> None:
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    document = {
        "openapi": "3.0.3",
        "paths": {
            "/n": {
                "get": {
                    "operationId": "legacy",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string", "nullable": True}},
                        {
                            "name": "n",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                        },
                    ],
                },
                "post": {"operationId": "loops", "requestBody": body},
                "put": {"operationId": "remote", "requestBody": {"$ref": "https://elsewhere.example/body.json"}},
            }
        },
        "components": {
            "schemas": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}}
        },
    }
    found = list(operations(document))
    legacy = next(item for item in found if isinstance(item, Operation))
    assert legacy.tool.input_schema["properties"]["q"]["type"] == ["string", "null"]
    assert legacy.tool.input_schema["properties"]["n"] == {"type": "integer", "exclusiveMinimum": 0}
    problems = sorted(str(item) for item in found if isinstance(item, OperationError))
    assert "operation 'loops' (POST /n): recursive schema" in problems[0]
    assert "operation 'remote' (PUT /n): $ref 'https://elsewhere.example/body.json' is not within" in problems[1]


async def test_documents_that_cannot_be_served_say_why(tmp_path: Path) -> None:
    def spec_for(document: object, **fields: Any) -> Any:
        path = tmp_path / "doc.yaml"
        path.write_text(json.dumps(document) if not isinstance(document, str) else document)
        config = parse_config({"mcpServers": {"api": {"openapi": str(path), **fields}}}, {})
        return config.servers["api"]

    with pytest.raises(DocumentError, match="Swagger 2.0 is not supported; convert it to OpenAPI 3"):
        await read_document(spec_for({"swagger": "2.0", "paths": {}}), 10_000)
    with pytest.raises(DocumentError, match=r"not an OpenAPI 3.0 or 3.1 document \(openapi: '4.0'\)"):
        await read_document(spec_for({"openapi": "4.0"}), 10_000)
    with pytest.raises(DocumentError, match="larger than 100 bytes"):
        await read_document(spec_for({"openapi": "3.1.0", "info": {"title": "x" * 200}}), 100)
    yaml_spec = spec_for("openapi: 3.1.0\nservers: [{url: /relative}]\npaths: {}\n")
    document = await read_document(yaml_spec, 10_000)  # YAML is read too
    with pytest.raises(DocumentError, match=r"no absolute base URL \(servers\[0\].url is '/relative'\); set baseUrl"):
        base_url(yaml_spec, document)
    with_base = spec_for("openapi: 3.1.0\npaths: {}\n", baseUrl="http://127.0.0.1:9/v1/")
    assert base_url(with_base, await read_document(with_base, 10_000)) == "http://127.0.0.1:9/v1"


def test_calls_keep_to_the_document_s_origin_unless_base_url_names_another(tmp_path: Path) -> None:
    """A fetched document's ``servers`` URL resolves against the document URL and must keep to its origin
    (scheme, host and port); ``baseUrl`` is the operator's word; a file's absolute URL is taken as written."""

    def spec_for(openapi: str, **fields: Any) -> Any:
        return parse_config({"mcpServers": {"api": {"openapi": openapi, **fields}}}, {}).servers["api"]

    def with_servers(url: str) -> dict[str, Any]:
        return {"openapi": "3.1.0", "servers": [{"url": url}], "paths": {}}

    fetched = spec_for("http://127.0.0.1:9/docs/openapi.json")
    assert base_url(fetched, with_servers("/v1/")) == "http://127.0.0.1:9/v1"
    assert base_url(fetched, with_servers("v2")) == "http://127.0.0.1:9/docs/v2"
    assert base_url(fetched, with_servers("HTTP://127.0.0.1:9/api")) == "http://127.0.0.1:9/api"  # the same origin
    for elsewhere, named in [
        ("//other.example/api", "http://other.example:80"),
        ("https://127.0.0.1:9/api", "https://127.0.0.1:9"),
        ("http://127.0.0.1:10/api", "http://127.0.0.1:10"),
    ]:
        said = rf"servers\[0\].url is on {re.escape(named)}, not on http://127.0.0.1:9 where the document was read"
        with pytest.raises(DocumentError, match=said) as refused:
            base_url(fetched, with_servers(elsewhere))
        assert "set baseUrl" in refused.value.public and named not in refused.value.public  # /ready names no host
    pinned = spec_for("http://127.0.0.1:9/openapi.json", baseUrl="http://127.0.0.1:10/api/")
    assert base_url(pinned, with_servers("http://127.0.0.1:11/")) == "http://127.0.0.1:10/api"
    from_file = spec_for(str(tmp_path / "doc.json"))
    assert base_url(from_file, with_servers("https://api.example/v1")) == "https://api.example/v1"


def test_a_path_that_does_not_begin_with_a_slash_leaves_its_operations_out() -> None:
    document = {"openapi": "3.1.0", "paths": {"@evil.example/x": {"get": {}}, "/ok": {"get": {"operationId": "ok"}}}}
    found = list(operations(document))
    assert [item.name for item in found if isinstance(item, Operation)] == ["ok"]
    assert [str(item) for item in found if isinstance(item, OperationError)] == [
        "path '@evil.example/x' does not begin with '/'"
    ]


def test_entries_are_checked_like_every_server_each_problem_named() -> None:
    data = {
        "mcpServers": {
            "a": {"openapi": "spec.json", "url": "http://x", "sharing": "per-session", "operations": "getItem"},
            "b": {"openapi": "", "baseUrl": "ftp://nope", "headers": {"X": 1}},
        }
    }
    with pytest.raises(UpstreamConfigError) as raised:
        parse_config(data, {})
    assert sorted(str(problem) for problem in raised.value.problems) == [
        "mcpServers.a.operations: must be a list of strings",
        "mcpServers.a.operations: must be a non-empty list of operationIds",
        "mcpServers.a.sharing: not for an openapi entry (an HTTP API, not an MCP server)",
        "mcpServers.a.url: not for an openapi entry (an HTTP API, not an MCP server)",
        "mcpServers.b.baseUrl: must start with http:// or https://",
        "mcpServers.b.headers.X: must be a string, got int",
        "mcpServers.b.openapi: must be the URL or file path of an OpenAPI document",
    ]


def test_from_openapi_works_with_or_without_a_config_file(tmp_path: Path) -> None:
    alone = config_of(Settings(from_openapi=("http://127.0.0.1:1/shop.yaml", "crm=./crm/openapi.json")), {})
    assert sorted(alone.servers) == ["crm", "shop"]
    assert alone.servers["crm"].openapi == str(Path.cwd() / "crm" / "openapi.json")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"shop": {"openapi": "shop.json"}}}))
    both = config_of(Settings(mcp_config=str(config), from_openapi=("http://127.0.0.1:1/openapi.json",)), {})
    assert sorted(both.servers) == ["127.0.0.1", "shop"]
    assert both.servers["shop"].openapi == str(tmp_path / "shop.json")  # relative to the file
    with pytest.raises(UpstreamConfigError, match="server 'shop' is already defined: name it with NAME="):
        config_of(Settings(mcp_config=str(config), from_openapi=("http://127.0.0.1:1/shop.json",)), {})
    with pytest.raises(ValueError, match="toolset does nothing here: it needs mcp_config"):
        Settings(toolset="x")


# -- calls through our server ------------------------------------------------------------------------


async def test_operations_are_listed_and_called_through_the_server(tmp_path: Path) -> None:
    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge) as mcp:
            tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
            listed = await mcp.call_tool("shop.list_items", {"limit": 2, "tag": ["a", "b"]})
            created = await mcp.call_tool("shop.create_item", {"body": {"name": "pen", "price": 2}})
            replaced = await mcp.call_tool("shop.replace_item", {"itemId": "7", "body": {"name": "ink"}})
            renamed = await mcp.call_tool("shop.rename_item", {"itemId": "7", "body": {"name": "nib"}})
            tagged = await mcp.call_tool("shop.tagged", {"X-Tag": "blue"})
            plain = await mcp.call_tool("shop.plain", {})
            me = await mcp.call_tool("shop.who_am_i", {})
            invalid = await mcp.call_tool("shop.create_item", {"body": {"price": 1}})
    assert {"shop.list_items", "shop.get_item", "shop.delete_item", "shop.who_am_i"} <= set(tools)
    assert tools["shop.get_item"].annotations is not None and tools["shop.get_item"].annotations.read_only_hint
    assert listed.structured_content == {"result": [{"id": "0", "tags": ["a", "b"]}, {"id": "1", "tags": ["a", "b"]}]}
    assert created.structured_content == {"id": "new", "name": "pen", "price": 2}
    assert replaced.structured_content == {"id": "7", "method": "PUT", "name": "ink"}
    assert renamed.structured_content == {"id": "7", "method": "PATCH", "name": "nib"}
    assert tagged.structured_content == {"tag": "blue"}
    assert (plain.is_error, plain.structured_content, text_of(plain)) == (False, None, "just text")
    assert me.is_error is False and me.structured_content is not None and me.structured_content["user"] == "alice"
    assert invalid.is_error is True and "name" in text_of(invalid)  # apcore checked it against the schema
    assert len([path for path in app.state.paths if path.startswith("/api/")]) == 7  # the invalid call never left


async def test_api_errors_and_timeouts_are_clear_tool_errors(tmp_path: Path) -> None:
    servers = {"shop": shop_entry("", timeout=0.5)}
    async with service_in_loop() as (base, _app):
        servers["shop"]["openapi"] = f"{base}/openapi.json"
        async with shop_bridge(tmp_path, servers) as bridge, client(bridge) as mcp:
            missing = await mcp.call_tool("shop.get_item", {"itemId": "missing"})
            fire = await mcp.call_tool("shop.explode", {})
            started = time.monotonic()
            slow = await mcp.call_tool("shop.slow", {"seconds": 5})
            took = time.monotonic() - started
    assert missing.is_error is True
    assert text_of(missing) == 'getItem failed: HTTP 404 Not Found: {"error":"no item missing"}'
    assert (fire.is_error, text_of(fire)) == (
        True,
        "explode failed: HTTP 500 Internal Server Error: the database is on fire",
    )
    # The module's timeout is the entry's too: whichever of it and the HTTP client's ends the call first
    assert slow.is_error is True and ("timed out" in text_of(slow) or "UPSTREAM_TIMEOUT" in text_of(slow))
    assert took < 3


async def test_a_delete_asks_for_approval_and_a_decline_runs_nothing(tmp_path: Path) -> None:
    asked: list[str] = []

    def answering(answer: types.ElicitResult) -> Any:
        async def callback(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return answer

        return callback

    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge, elicitation_callback=answering(NO)) as mcp:
            declined = await mcp.call_tool("shop.delete_item", {"itemId": "41"})
            read = await mcp.call_tool("shop.get_item", {"itemId": "41"})  # a GET asks nothing
        assert app.state.deleted == []
        async with client(bridge, elicitation_callback=answering(YES)) as mcp:
            accepted = await mcp.call_tool("shop.delete_item", {"itemId": "42"})
    assert declined.is_error is True and "approval" in text_of(declined).lower()
    assert read.is_error is False
    assert len(asked) == 2 and all("shop.delete_item" in message for message in asked)
    assert (accepted.is_error, text_of(accepted)) == (False, "HTTP 204 (no content)")
    assert app.state.deleted == ["42"]


async def test_a_toolset_selects_an_openapi_server_like_any_other(tmp_path: Path) -> None:
    servers = {"shop": shop_entry("", operations=["getItem", "listItems"]), "other": shop_entry("")}
    toolsets = {"default": {"servers": ["shop"], "modules": False}}
    async with service_in_loop() as (base, _app):
        for entry in servers.values():
            entry["openapi"] = f"{base}/openapi.json"
        async with shop_bridge(tmp_path, servers, toolsets=toolsets) as bridge, client(bridge) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            outside = await mcp.call_tool("other.get_item", {"itemId": "1"})
    assert names == {"shop.get_item", "shop.list_items"}
    assert outside.is_error is True


def test_from_openapi_on_the_command_line_mounts_the_api(tmp_path: Path) -> None:
    with service_process() as base:
        command = apcore_server(EXTENSIONS, "--from-openapi", f"shop={base}/openapi.json")
        server = start_server(command, "streamable-http", tmp_path)
        try:

            async def calls() -> tuple[set[str], types.CallToolResult]:
                async with server.client() as mcp:
                    names = {tool.name for tool in (await mcp.list_tools()).tools}
                    return names, await mcp.call_tool("shop.get_item", {"itemId": "9"})

            import anyio

            names, result = anyio.run(calls)
        finally:
            server.stop()
    assert {"shop.get_item", "shop.delete_item", "text.stats"} <= names
    assert result.structured_content == {"id": "9", "raw_path": "/api/items/9"}


TRACED = textwrap.dedent(
    """
    import json, sys
    import anyio
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tests._support.openapi import client, service_in_loop, shop_bridge, shop_entry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    async def main():
        async with service_in_loop() as (base, app), shop_bridge(__import__("pathlib").Path(sys.argv[1]), {"shop": shop_entry(base)}) as bridge:
            async with client(bridge) as mcp:
                await mcp.call_tool("shop.get_item", {"itemId": "5"})
                await mcp.call_tool("shop.get_item", {"itemId": "missing"})
        spans = [
            {"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes), "trace_id": format(s.context.trace_id, "032x")}
            for s in exporter.get_finished_spans() if s.name.startswith("HTTP ")
        ]
        print(json.dumps({"spans": spans, "traceparents": [h.get("traceparent") for h in app.state.seen]}))

    anyio.run(main)
    """
)


def test_each_request_is_a_client_span_whose_context_reaches_the_api(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TRACED, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    ok, missing = report["spans"]
    assert ok["name"] == "HTTP GET" and ok["kind"] == "CLIENT"
    assert ok["attributes"] == {
        "http.request.method": "GET",
        "server.address": "127.0.0.1",
        "url.template": "/items/{itemId}",
        "http.response.status_code": 200,
    }
    assert missing["attributes"]["error.type"] == "404"
    first = report["traceparents"][0]
    assert first is not None and first.split("-")[1] == ok["trace_id"]
    assert SECRET not in done.stdout + done.stderr
