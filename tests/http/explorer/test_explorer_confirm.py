"""The explorer never runs a destructive or approval-gated tool on one click, and shows rich results.

Headless Chromium drives the page (the ``explorer`` helper of ``test_explorer_browser``); the
door's 428 without the page's confirmation is checked over HTTP in ``tests/hostile/test_explorer_mcp_seams.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from apcore import Executor
from playwright.async_api import Browser, expect

from apcore_mcp import install_pipeline

from tests._support.browser import ARTIFACTS, explorer, protocol_log
from tests._support.modules import make_registry

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def test_a_destructive_tool_asks_for_confirmation(browser: Browser, tmp_path: Path) -> None:
    marker = tmp_path / "purged"
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.purge")
        await expect(page.locator("#detail h2")).to_have_text("demo.purge")
        await page.get_by_label("marker", exact=True).fill(str(marker))

        # demo.purge needs approval: the server asks the page, which shows what would run.
        await page.locator("#run").click()
        dialog = page.locator("#approval-dialog")
        await expect(dialog).to_be_visible()
        await expect(dialog.locator(".chip.destructive")).to_have_text("destructive")
        await expect(dialog.locator(".chip.approval")).to_have_text("needs approval")
        await expect(page.locator("#approval-args")).to_contain_text(str(marker))
        await dialog.get_by_role("button", name="Cancel").click()
        await expect(dialog).to_have_count(0)
        await expect(page.locator("#output")).to_contain_text("the user cancelled the confirmation")
        assert not marker.exists()

        await page.locator("#run").click()
        await dialog.get_by_role("button", name="Approve and run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "done": true\n}')
        assert marker.read_text() == "ran"
        assert ex.unexpected_problems() == []


async def test_a_428_answer_opens_the_pages_confirmation(browser: Browser, tmp_path: Path) -> None:
    # Without our approval handler the server does not ask about demo.purge: it wants the page's
    # confirmation (HTTP 428), which the page asks for and then sends as X-Apcore-Confirm.
    marker = tmp_path / "purged"
    async with explorer(browser, install_pipeline(Executor(make_registry())), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.purge")
        await page.get_by_label("marker", exact=True).fill(str(marker))
        await page.locator("#run").click()
        dialog = page.locator("#confirm-dialog")
        await expect(dialog).to_contain_text("demo.purge requires approval and is destructive.")
        await page.locator("#confirm-cancel").click()
        await expect(page.locator("#output .failure")).to_have_text("Not run: you did not confirm the call.")
        assert not marker.exists()

        await page.locator("#run").click()
        await page.locator("#confirm-run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "done": true\n}')
        assert marker.read_text() == "ran"
        await page.get_by_role("tab", name="Protocol").click()
        log = await protocol_log(page)
        calls = [e["message"] for e in log if e["what"] == "tools/call"]
        statuses = [e["what"].split(" · ")[0] for e in log if e["kind"] == "http"]
        assert len(calls) == 2 and statuses[-2:] == ["HTTP 428", "HTTP 200"]  # refused, then confirmed
        assert ex.unexpected_problems(r"status of 428 .*/explorer/mcp") == []


async def test_an_image_result_shows_as_an_image(browser: Browser) -> None:
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.media")
        await page.locator("#run").click()
        image = page.locator("#output img.media")
        await expect(image).to_be_visible()
        assert await image.evaluate("img => img.complete && img.naturalWidth") == 1  # the PNG decoded
        await expect(page.locator("#output audio.media")).to_have_count(1)
        await expect(page.locator("#output figure.media")).to_contain_text("data://source.csv")
        await expect(page.locator("#output .link-block")).to_contain_text("echo docs docs://demo.echo")
        await expect(page.locator("#output")).to_contain_text('"title": "a chart"')
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-media.png"))
        assert ex.unexpected_problems() == []  # no CSP violation for the data: image or audio
