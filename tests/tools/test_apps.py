"""MCP Apps (``io.modelcontextprotocol/ui``): a module's view served as the extension requires.

Through the SDK's own client, in memory and over uvicorn on a loopback port, in both protocol
eras: the capability under ``extensions``, the tool's ``_meta.ui.resourceUri``, the ``ui://``
resource in ``resources/list`` and ``resources/read`` with its MIME type and CSP metadata, a
module without a view left as it was, and a view that cannot be served leaving its module served
without it (one WARNING naming both).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import mcp.types as types
import pytest
from apcore import Registry
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.tools.views import APP_MIME_TYPE, EXTENSION_ID

from tests._support.apps import VIEW_PAGE, discovered, write_module
from tests._support.sessions import running_http
from tests.project.test_examples import EXAMPLES, example_registry

STATS_VIEW = "ui://text.stats/view"
NO_ORIGINS: dict[str, Any] = {"csp": {"connectDomains": [], "resourceDomains": []}}
ROUTES = [("memory", "legacy"), ("memory", "auto"), ("http", "legacy"), ("http", "auto")]


@contextlib.asynccontextmanager
async def connected(bridge: Bridge, transport: str, mode: str) -> AsyncIterator[Client]:
    if transport == "memory":
        async with Client(bridge.server, mode=mode, cache=None) as client:
            yield client
    else:
        async with running_http(bridge) as url, Client(f"{url}/mcp", mode=mode, cache=None) as client:
            yield client


def view_resources(listed: types.ListResourcesResult) -> dict[str, types.Resource]:
    return {resource.uri: resource for resource in listed.resources if resource.uri.startswith("ui://")}


@pytest.mark.parametrize(("transport", "mode"), ROUTES, ids=[f"{t}-{m}" for t, m in ROUTES])
async def test_the_example_view_is_linked_listed_and_read(transport: str, mode: str) -> None:
    bridge = Bridge.build(example_registry())
    async with connected(bridge, transport, mode) as client:
        # SEP-2133 capabilities.extensions exists on the 2026-07-28 wire only; the SDK sieves it
        # from a 2025-11-25 initialize result. There the tool's _meta.ui is what a host goes by.
        extensions = client.server_capabilities.extensions
        if mode == "auto":
            assert extensions is not None and extensions[EXTENSION_ID] == {}
        else:
            assert EXTENSION_ID not in (extensions or {})

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["text.stats"].meta is not None
        assert tools["text.stats"].meta["ui"] == {"resourceUri": STATS_VIEW}
        # A module without a view is listed as before: no ui key, the same apcore keys.
        assert tools["geo.distance"].meta == {"apcore/requiresApproval": False, "apcore/streaming": False}

        listed = view_resources(await client.list_resources())
        assert list(listed) == [STATS_VIEW]
        assert listed[STATS_VIEW].mime_type == APP_MIME_TYPE
        assert listed[STATS_VIEW].meta == {"ui": NO_ORIGINS}

        read = await client.read_resource(STATS_VIEW)
        assert len(read.contents) == 1
        contents = read.contents[0]
        assert isinstance(contents, types.TextResourceContents)
        assert (contents.uri, contents.mime_type) == (STATS_VIEW, APP_MIME_TYPE)
        assert contents.meta == {"ui": NO_ORIGINS}
        assert contents.text == (EXAMPLES / "text" / "stats.html").read_text("utf-8")

        # The tool still answers in text and structured content for hosts that render no view.
        stats = await client.call_tool("text.stats", {"text": "a b a"})
        assert stats.structured_content is not None and stats.structured_content["words"] == 3

        with pytest.raises(MCPError) as missing:
            await client.read_resource("ui://geo.distance/view")
        assert missing.value.error.code == types.INVALID_PARAMS


async def test_a_view_object_declares_inline_html_and_the_origins_it_may_reach(tmp_path: Path) -> None:
    view = (
        f"View(html={VIEW_PAGE!r}, title='Length', connect_domains=['https://api.example.com'], "
        "resource_domains=['https://*.cdn.example.com:8443'], prefers_border=True)"
    )
    write_module(tmp_path, "demo.length", view)
    bridge = Bridge.build(discovered(tmp_path, 1))
    async with Client(bridge.server, mode="auto", cache=None) as client:
        listed = view_resources(await client.list_resources())["ui://demo.length/view"]
        read = (await client.read_resource("ui://demo.length/view")).contents[0]
    ui = {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example.com:8443"]},
        "prefersBorder": True,
    }
    assert (listed.name, listed.meta) == ("Length", {"ui": ui})
    assert isinstance(read, types.TextResourceContents)
    assert (read.text, read.meta) == (VIEW_PAGE, {"ui": ui})


def served_without_view(caplog: pytest.LogCaptureFixture, tmp_path: Path, view: str) -> tuple[Bridge, str]:
    """The module ``demo.length`` with ``view``: served, listed without ``_meta.ui``; the WARNING's text."""
    write_module(tmp_path, "demo.length", view)
    with caplog.at_level(logging.WARNING, logger="apcore_mcp.tools.catalog"):
        bridge = Bridge.build(discovered(tmp_path, 1))
    record = bridge.catalog.get("demo.length")
    assert record is not None and record.view is None
    assert "ui" not in (record.mcp_tool.meta or {})
    warnings = [r.getMessage() for r in caplog.records if "served without its view" in r.getMessage()]
    assert len(warnings) == 1
    return bridge, warnings[0]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_missing_view_file_serves_the_module_without_it_and_says_so(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, mode: str
) -> None:
    bridge, warning = served_without_view(caplog, tmp_path, "'missing.html'")
    assert "demo.length" in warning and str(tmp_path / "demo" / "missing.html") in warning
    async with Client(bridge.server, mode=mode, cache=None) as client:
        assert view_resources(await client.list_resources()) == {}
        with pytest.raises(MCPError) as missing:
            await client.read_resource("ui://demo.length/view")
        assert missing.value.error.code == types.INVALID_PARAMS
        called = await client.call_tool("demo.length", {"text": "four"})
        assert called.structured_content == {"length": 4}


@pytest.mark.parametrize(
    ("view", "said"),
    [
        ("View(html='<p>x</p>', connect_domains=['https://a.example; script-src *'])", "not an https origin"),
        ("View(html='<p>x</p>', connect_domains=['http://a.example'])", "not an https origin"),
        ("View(html='<p>x</p>', connect_domains='https://a.example')", "a list of origins"),
        ("View(file='a.html', html='<p>x</p>')", "exactly one of file= and html="),
        ("42", "a file name or an apcore_mcp.View"),
        ("'/etc/hostname'", "relative to the module's file"),
    ],
)
def test_a_malformed_view_is_refused_with_a_clear_reason(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, view: str, said: str
) -> None:
    _bridge, warning = served_without_view(caplog, tmp_path, view)
    assert said in warning and "demo.length" in warning


class PageIn(BaseModel):
    pass


class Page:
    """A resource module trying to take a view's URI."""

    description = "a page"
    input_schema = PageIn
    metadata: ClassVar[dict[str, Any]] = {"mcp_resource": {"uri": "ui://demo.length/view"}}

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, str]:
        return {"text": "not a view"}


def test_a_resource_module_may_not_take_a_view_uri(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    registry.register("demo.page", Page())
    with caplog.at_level(logging.WARNING, logger="apcore_mcp.tools.catalog"):
        bridge = Bridge.build(registry)
    assert bridge.catalog.module("demo.page") is None
    assert any("kept for module views" in record.getMessage() for record in caplog.records)


def test_the_examples_have_one_view(tmp_path: Path) -> None:
    """Only text.stats declares one; its page names no external origin (no CDN) and uses the host protocol."""
    bridge = Bridge.build(example_registry())
    views = {record.name: record.view for record in bridge.catalog.records() if record.view is not None}
    assert list(views) == ["text.stats"]
    page: Any = views["text.stats"]
    assert "ui/initialize" in page.html and '"tools/call"' in page.html
    assert "http://" not in page.html and "https://" not in page.html and "src=" not in page.html
