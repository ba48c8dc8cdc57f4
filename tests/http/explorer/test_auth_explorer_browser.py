"""The explorer page with auth on, in a real headless Chromium (marker ``browser``).

The page loads without a token, asks for one before it lists anything, says so when the token
is refused, and then lists and runs tools as the caller (the ACL decides per caller).
"""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from tests._support.auth import ALICE_KEY, BOB_KEY, api_key_entry, role_executor
from tests._support.browser import explorer

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def test_the_page_asks_for_the_token_and_calls_as_the_caller(browser: Browser) -> None:
    keys = [api_key_entry(ALICE_KEY, "alice", "writer"), api_key_entry(BOB_KEY, "bob", "reader")]
    settings = {"auth": "api-key", "auth_api_keys": keys, "allow_execute": True, "public_url": "http://127.0.0.1:1"}
    async with explorer(browser, role_executor(), **settings) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.echo")
        await expect(page.locator("#auth-token")).to_be_focused()
        await expect(ex.visible_tools()).to_have_count(0)

        await page.locator("#auth-token").fill(ALICE_KEY + "x")
        await page.locator("#auth-submit").click()
        await expect(page.locator("#auth-error")).to_have_text("The API key is not valid")

        await page.locator("#auth-token").fill(ALICE_KEY)
        await page.locator("#auth-submit").click()
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")  # the linked tool opens
        await expect(ex.visible_tools()).to_contain_text(["demo.echo"])
        await page.get_by_label("text", exact=True).fill("hello")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "echo": "hello"\n}')

        # Another caller in the same page: bob's key lists the same tools, but the ACL refuses his call.
        await page.evaluate("() => location.reload()")
        await page.locator("#auth-token").fill(BOB_KEY)
        await page.locator("#auth-submit").click()
        await ex.select("demo.echo")
        await page.get_by_label("text", exact=True).fill("hello")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text("The tool reported an error (isError).Access denied")
        await expect(page.locator("#output")).to_have_class("result error")
        await expect(page.locator(".status")).to_have_class("status bad")

        allowed = [r"status of 401 .*/explorer/tools"]
        assert ex.unexpected_problems(*allowed) == []
        assert ex.dialogs == []
