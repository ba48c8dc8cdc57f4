"""The explorer renders a tool's MCP Apps view in a sandboxed frame (headless Chromium), both eras.

The example ``text.stats`` view: a run of the tool from the page opens the view, which shakes
hands (``ui/initialize``), gets the arguments and the result and draws them; then the view's own
"Count" button calls the tool through the page's MCP client and draws the new result. The frame
is ``sandbox="allow-scripts"`` without ``allow-same-origin``, served with the view frame's policy.
Any console error, page error or CSP violation (the frame's too) fails the test.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect

from apcore_mcp.http.explorer.views import FRAME_POLICY

from tests._support.browser import ARTIFACTS, ERAS, choose_era, explorer
from tests.project.test_examples import example_registry

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def open_tool(page: Page, url: str, era: str, name: str) -> None:
    await page.goto(url + "#tool=" + name)
    await choose_era(page, era)
    await expect(page.locator("#detail h2")).to_have_text(name)


@pytest.mark.parametrize("era", ERAS)
async def test_a_run_opens_the_view_and_the_view_calls_its_tool(browser: Browser, era: str) -> None:
    async with explorer(browser, example_registry(), allow_execute=True) as ex:
        page = ex.page
        frame_answers: list[dict[str, str]] = []
        page.on("response", lambda r: frame_answers.append(r.headers) if r.url.endswith("/view-frame") else None)
        await open_tool(page, ex.url, era, "text.stats")
        await expect(page.locator("#view-status")).to_contain_text("MCP Apps view")
        await page.get_by_label("text", exact=True).fill("the cat and the hat")
        await page.locator("#run").click()

        frame_element = page.locator("#view-frame")
        await expect(frame_element).to_have_attribute("sandbox", "allow-scripts")
        view = page.frame_locator("#view-frame")
        await expect(view.locator("#totals")).to_have_text("5 words, 19 characters, 1 lines")
        await expect(view.locator("#words tr").first).to_contain_text("the2")
        await expect(view.locator("#text")).to_have_value("the cat and the hat")  # the tool input reached it
        await expect(page.locator("#view-status")).to_have_text("view ready")

        await view.locator("#text").fill("one two two\nthree")
        await view.locator("#count").click()  # tools/call from the view, through the page
        await expect(view.locator("#totals")).to_have_text("4 words, 17 characters, 2 lines")
        await expect(view.locator("#status")).to_have_text("Done")
        await page.screenshot(path=str(ARTIFACTS / f"explorer-view-{era[:4]}.png"))

        assert frame_answers and frame_answers[0]["content-security-policy"] == FRAME_POLICY
        frame = page.frame(url=lambda url: url.endswith("/view-frame"))
        assert frame is not None and await frame.evaluate("origin") == "null"  # opaque: not the page's origin
        assert ex.unexpected_problems() == []


async def test_a_tool_without_a_view_shows_no_view_card(browser: Browser) -> None:
    async with explorer(browser, example_registry(), allow_execute=True) as ex:
        await open_tool(ex.page, ex.url, ERAS[0], "geo.distance")
        await expect(ex.page.locator("#detail .card").first).to_be_visible()
        assert await ex.page.locator("#open-view, #view-frame").count() == 0
        assert ex.unexpected_problems() == []
