"""MCP Apps views against a hostile module author and a caller who should not see them.

A view path that leaves the module's directory (``../``, or a symlink out) or a page over
``MAX_VIEW_BYTES`` is refused: the module is served without it. A view is seen by exactly who
sees its tool: a filtered list (``auth_filter_tools``) hides it from a caller the tool is hidden
from and reading it answers "not found", in both eras over HTTP; the ``tags``/``prefix`` filters,
search mode and a toolset endpoint serve no view of a module they do not list. In the explorer
(headless Chromium): the view's frame reaches neither the page's DOM, its state (the token), its
cookies nor its storage, sends no request, and is never posted the token; it calls only its own
tool; with execution off its ``tools/call`` is refused by the explorer's door and runs nothing, and
a destructive tool is refused too (nothing from inside a view stands for the person's confirmation).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from apcore import Registry
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from playwright.async_api import Browser, Frame, Page, expect

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.explorer.mcp import EXECUTION_OFF
from apcore_mcp.settings import Settings
from apcore_mcp.tools.views import MAX_VIEW_BYTES

from tests._support.apps import VIEW_PAGE, discovered, probe_registry, write_module
from tests._support.auth import api_key_entry, bearer
from tests._support.browser import explorer
from tests._support.hostile import serving

ALICE = "alice-key-" + "a" * 30  # no scopes
CAROL = "carol-key-" + "c" * 30  # holds "vault"
SHOWN, HIDDEN = "demo.length", "vault.length"


def view_of(module_id: str) -> str:
    return f"ui://{module_id}/view"


def refused_view(caplog: pytest.LogCaptureFixture, root: Path, view: str) -> str:
    """Builds ``demo.length`` with ``view`` and returns the WARNING; the module is served, viewless."""
    with caplog.at_level(logging.WARNING, logger="apcore_mcp.tools.catalog"):
        bridge = Bridge.build(discovered(root, 1))
    record = bridge.catalog.get(SHOWN)
    assert record is not None, "the module itself is still served"
    assert record.view is None and "ui" not in (record.mcp_tool.meta or {})
    said = [r.getMessage() for r in caplog.records if "served without its view" in r.getMessage()]
    assert len(said) == 1
    return said[0]


def test_a_view_path_leaving_the_module_directory_is_refused(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    root = tmp_path / "extensions"
    (tmp_path / "secret.html").write_text("<p>a file outside the module's directory</p>")
    write_module(root, SHOWN, "'../../secret.html'")
    assert "outside the module's directory" in refused_view(caplog, root, "'../../secret.html'")


def test_a_symlink_out_of_the_module_directory_is_refused(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    root = tmp_path / "extensions"
    (tmp_path / "secret.html").write_text("<p>a file outside the module's directory</p>")
    folder = write_module(root, SHOWN, "'page.html'")
    (folder / "page.html").symlink_to(tmp_path / "secret.html")
    assert "outside the module's directory" in refused_view(caplog, root, "'page.html'")


@pytest.mark.parametrize("inline", [False, True], ids=["file", "inline"])
def test_a_view_over_the_byte_bound_is_refused(caplog: pytest.LogCaptureFixture, tmp_path: Path, inline: bool) -> None:
    page = "<p>" + "x" * MAX_VIEW_BYTES + "</p>"
    if inline:
        write_module(tmp_path, SHOWN, f"View(html='<p>' + 'x' * {MAX_VIEW_BYTES} + '</p>')")
    else:
        (write_module(tmp_path, SHOWN, "'big.html'") / "big.html").write_text(page)
    assert f"larger than {MAX_VIEW_BYTES} bytes" in refused_view(caplog, tmp_path, "")


def two_viewed_modules(root: Path) -> Registry:
    """``demo.length`` (tag public) and ``vault.length`` (tag private), each with a view."""
    for module_id, tag in ((SHOWN, "public"), (HIDDEN, "private")):
        (write_module(root, module_id, "'page.html'", tags=(tag,)) / "page.html").write_text(VIEW_PAGE)
    return discovered(root, 2)


async def seen_views(client: Client) -> tuple[list[str], dict[str, str]]:
    """The view URIs ``resources/list`` shows, and how reading each of the two views ends."""
    listed = sorted(r.uri for r in (await client.list_resources()).resources if r.uri.startswith("ui://"))
    read: dict[str, str] = {}
    for module_id in (SHOWN, HIDDEN):
        try:
            contents = (await client.read_resource(view_of(module_id))).contents[0]
            read[module_id] = "read" if isinstance(contents, types.TextResourceContents) else "?"
        except MCPError as error:
            read[module_id] = f"error {error.error.code}"
    return listed, read


Seen = tuple[list[str], dict[str, str]]
ONLY_SHOWN: Seen = ([view_of(SHOWN)], {SHOWN: "read", HIDDEN: f"error {types.INVALID_PARAMS}"})
BOTH: Seen = ([view_of(SHOWN), view_of(HIDDEN)], {SHOWN: "read", HIDDEN: "read"})
NONE: Seen = ([], {SHOWN: f"error {types.INVALID_PARAMS}", HIDDEN: f"error {types.INVALID_PARAMS}"})


@contextlib.asynccontextmanager
async def client_at(endpoint: str, key: str | None, mode: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers=bearer(key) if key else None) as http:
        async with Client(streamable_http_client(endpoint, http_client=http), mode=mode, cache=None) as client:
            yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_caller_who_cannot_see_the_tool_cannot_see_or_read_its_view(mode: str, tmp_path: Path) -> None:
    settings: dict[str, Any] = {
        "auth": "api-key",
        "auth_api_keys": (api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="vault")),
        "auth_tool_scopes": ("vault.*=vault",),
        "auth_filter_tools": True,
    }
    async with serving(two_viewed_modules(tmp_path), **settings) as (url, _bridge):
        async with client_at(f"{url}/mcp", ALICE, mode) as alice:
            assert [tool.name for tool in (await alice.list_tools()).tools] == [SHOWN]
            assert await seen_views(alice) == ONLY_SHOWN
        async with client_at(f"{url}/mcp", CAROL, mode) as carol:
            assert await seen_views(carol) == BOTH


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"tags": ("public",)}, ONLY_SHOWN),
        ({"prefix": "demo."}, ONLY_SHOWN),
        ({"tool_mode": "search"}, NONE),  # only the meta-tools are listed: no tool, no view
    ],
    ids=["tags", "prefix", "search"],
)
async def test_filters_and_search_mode_serve_no_view_of_a_module_they_do_not_list(
    mode: str, settings: dict[str, Any], expected: Seen, tmp_path: Path
) -> None:
    bridge = Bridge.build(two_viewed_modules(tmp_path), Settings(**settings))
    async with Client(bridge.server, mode=mode, cache=None) as client:
        assert await seen_views(client) == expected


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_toolset_endpoint_serves_only_the_views_of_its_modules(mode: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": {"tags": ["public"]}}}}))
    async with serving(two_viewed_modules(tmp_path / "extensions"), mcp_config=str(config)) as (url, _bridge):
        async with client_at(f"{url}/toolsets/team/mcp", None, mode) as team:
            assert await seen_views(team) == ONLY_SHOWN
        async with client_at(f"{url}/mcp", None, mode) as everything:
            assert await seen_views(everything) == BOTH


# -- the explorer's frame ------------------------------------------------------------------------

TOKEN = "explorer-token-" + "t" * 24
CSP_BLOCKED_FETCH = (
    r"CSP violation: connect-src|directive: \"connect-src 'none'\"|Refused to connect because it violates the document"
)
"""What Chromium logs for the view's fetch its frame's policy blocks (the test provokes it)."""


async def opened_probe(page: Page, url: str, token: str | None = None) -> Frame:
    """The explorer at ``probe.touch`` with its view open and initialized; the view's frame."""
    await page.goto(url + "#tool=probe.touch")
    await expect(page.locator("#detail h2")).to_have_text("probe.touch")
    if token is not None:
        await page.locator("#token").fill(token)
    await page.locator("#open-view").click()
    await expect(page.frame_locator("#view-frame").locator("#ready")).to_have_text("ready")
    frame = page.frame(url=lambda frame_url: frame_url.endswith("/view-frame"))
    assert frame is not None
    return frame


@pytest.mark.browser
@pytest.mark.asyncio(loop_scope="session")  # the session's Chromium
async def test_the_view_frame_reaches_nothing_of_the_explorer(browser: Browser, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with explorer(
        browser, probe_registry(tmp_path / "extensions"), allow_execute=True, execute_token=TOKEN
    ) as ex:
        page = ex.page
        await page.context.add_cookies([{"name": "session", "value": "cookie-secret", "url": ex.url}])
        await page.goto(ex.url)
        await page.evaluate("localStorage.setItem('kept', 'storage-secret')")
        frame = await opened_probe(page, ex.url, TOKEN)

        probe = json.loads(await page.frame_locator("#view-frame").locator("#probe").inner_text())
        assert probe == {
            "dom": "blocked",
            "explorerState": "blocked",
            "cookie": "blocked",
            "localStorage": "blocked",
            "sessionStorage": "blocked",
            "origin": "null",
        }
        assert await frame.evaluate("fetchPage()") == "blocked"  # connect-src 'none', and an opaque origin

        # It calls its own tool through the page (which holds the token), and only that tool.
        said = await frame.evaluate(f"callTool('probe.touch', {{marker: {json.dumps(str(marker))}}})")
        assert said == 'result: {"touched":true}' and marker.read_text() == "ran"
        assert await frame.evaluate("callTool('other.tool', {})") == "error: This view may call only probe.touch"
        received = "\n".join(await frame.evaluate("window.received"))
        assert TOKEN not in received and "cookie-secret" not in received and "storage-secret" not in received
        assert ex.unexpected_problems(CSP_BLOCKED_FETCH) == []


@pytest.mark.browser
@pytest.mark.asyncio(loop_scope="session")  # the session's Chromium
async def test_the_view_cannot_call_tools_while_execution_is_off(browser: Browser, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with explorer(browser, probe_registry(tmp_path / "extensions"), allow_execute=False) as ex:
        frame = await opened_probe(ex.page, ex.url)  # reading the view needs no execution, as docs:// do not
        said = await frame.evaluate(f"callTool('probe.touch', {{marker: {json.dumps(str(marker))}}})")
        assert said == f"error: {EXECUTION_OFF}"
        assert not marker.exists()
        assert ex.unexpected_problems(r"status of 403") == []


@pytest.mark.browser
@pytest.mark.asyncio(loop_scope="session")  # the session's Chromium
async def test_the_view_cannot_run_a_destructive_tool_without_the_persons_confirmation(
    browser: Browser, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    registry = probe_registry(tmp_path / "extensions", destructive=True)
    async with explorer(browser, registry, allow_execute=True) as ex:
        frame = await opened_probe(ex.page, ex.url)
        said = await frame.evaluate(f"callTool('probe.touch', {{marker: {json.dumps(str(marker))}}})")
        assert said == "error: probe.touch is destructive: confirm the call to run it"
        assert not marker.exists() and await ex.page.locator("dialog").count() == 0
        assert ex.unexpected_problems(r"status of 428") == []
