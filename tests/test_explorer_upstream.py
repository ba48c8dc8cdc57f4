"""The explorer page says what an upstream tool calls: ``my_tools.get_sum`` is ``get-sum`` of ``my-tools``.

That mapping is shown where the tool itself is (the explorer's data, behind its own opt-in and
auth), not on ``/ready``. Headless Chromium reads it on the page for an upstream tool (a real
upstream process, mounted in process), and finds no such line for a local tool.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.async_api import Browser, expect

from tests._support.browser import explorer
from tests._support.modules import make_executor
from tests._support.named_upstream import named_children, named_entry
from tests._support.upstreams import mounted

pytestmark = pytest.mark.browser


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
