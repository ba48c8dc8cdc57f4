"""The explorer's Server view lists what is hidden and why, for an operator (``/admin/tools``).

Auth off with ``admin_routes`` on and the page on the loopback: the operator's case. Headless
Chromium against uvicorn on 127.0.0.1; ``--prefix demo.`` leaves ``admin.purge`` out.
"""

from __future__ import annotations

import pytest
from apcore import Registry
from playwright.async_api import Browser, expect

from tests._support.browser import explorer
from tests._support.modules import Echo

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def test_the_server_view_says_why_a_tool_is_hidden(browser: Browser) -> None:
    registry = Registry()
    registry.register("demo.echo", Echo())
    registry.register("admin.purge", Echo())
    async with explorer(browser, registry, prefix="demo.", admin_routes=True) as ex:
        await ex.page.goto(ex.url)
        await ex.page.locator("#view-server").click()
        row = ex.page.locator('#hidden-tools tr[data-name="admin.purge"]')
        await expect(row).to_contain_text("left out by the prefix filter")
        await expect(ex.page.locator("#server-info")).to_contain_text("Hidden tools")
        assert ex.problems == []
