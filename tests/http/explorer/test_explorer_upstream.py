"""The explorer page says what an upstream tool calls: ``my_tools.get_sum`` is ``get-sum`` of ``my-tools``.

That mapping is shown where the tool itself is (the explorer's data, behind its own opt-in and
auth), not on ``/ready``. Headless Chromium reads it on the page for an upstream tool (a real
upstream process, mounted in process), and finds no such line for a local tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.browser import ARTIFACTS, ERAS, choose_era, explorer, explorer_at
from tests._support.modules import make_executor
from tests._support.named_upstream import named_children, named_entry
from tests._support.upstreams import mounted, stdio_entry

EXTENSIONS = Path(__file__).resolve().parents[3] / "examples" / "extensions"

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert named_children() == []


async def test_an_upstream_tool_shows_its_server_and_its_own_name(browser: Browser) -> None:
    async with (
        mounted({"mcpServers": {"my-tools": named_entry("get-sum", "echo")}}, executor=make_executor()) as mount,
        explorer(browser, mount.executor) as ex,
    ):
        page = ex.page
        await page.goto(ex.url + "#tool=my_tools.get_sum")
        await expect(page.locator("#detail h2")).to_have_text("my_tools.get_sum")
        await expect(page.locator("#upstream")).to_have_text("upstream: my-tools / get-sum")
        await page.goto(ex.url + "#tool=demo.echo")  # a local tool
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        await expect(page.locator("#upstream")).to_have_count(0)
        assert ex.unexpected_problems() == []


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[RunningServer]:
    """The CLI with an mcp.json upstream (a process of its own) and the explorer running tools."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": stdio_entry()}}))
    command = apcore_server(EXTENSIONS, "--mcp-config", str(config), "--explorer", "--allow-execute")
    server = start_server(command, "streamable-http", tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_tool_asks_through_the_page_and_its_server_shows_its_state(
    browser: Browser, deployed: RunningServer, era: str
) -> None:
    assert deployed.base_url is not None
    async with explorer_at(browser, deployed.base_url) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=notes.ask")
        await choose_era(page, era)
        await expect(page.locator("#detail h2")).to_have_text("notes.ask")
        await page.get_by_label("question", exact=True).fill("Ship it?")
        for action, answer in (("Accept", "yes"), ("Decline", "")):
            await page.locator("#run").click()
            # No annotations: MCP's defaults make it destructive, so the page confirms first.
            await page.get_by_role("dialog", name="Run notes.ask?").get_by_role("button", name="Run notes.ask").click()
            dialog = page.get_by_role("dialog", name="The server asks")
            await expect(dialog).to_be_visible()
            await expect(page.locator("#elicit-message")).to_have_text("Ship it?")
            if answer:
                await dialog.locator("input").first.fill(answer)
                await page.screenshot(path=str(ARTIFACTS / f"explorer-upstream-elicitation-{era}.png"), full_page=True)
            await dialog.get_by_role("button", name=action).click()
            await expect(dialog).to_have_count(0)
            await expect(page.locator("#output")).to_contain_text(f"{action.lower()}:{answer}")

        # The server view: the upstream, its tool count and its state, from /ready.
        await page.locator("#view-server").click()
        row = page.locator('#upstreams tr[data-name="notes"]')
        await expect(row.locator(".upstream-state")).to_have_text("connected")
        assert int(await row.locator("td").nth(1).inner_text()) > 5
        await page.screenshot(path=str(ARTIFACTS / f"explorer-upstreams-{era}.png"), full_page=True)
        assert ex.unexpected_problems() == []
