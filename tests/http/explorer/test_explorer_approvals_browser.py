"""The explorer's approval queue: an approver sees a waiting ``person`` call and decides it.

Auth off and the page on the loopback: the approver's case. A 2025-11-25 SDK client calls a
``person`` tool and only says it opened the link; headless Chromium opens the explorer's Server
view, finds the call in the queue (tool, caller, masked arguments) and presses a button. The
module leaves a line in a marker file per run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp import types
from playwright.async_api import Browser, expect

from tests._support.browser import explorer
from tests._support.person_approval import person_registry, runs, sdk_call

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def opened_link(params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept")  # "I opened it": approves nothing by itself


@pytest.mark.parametrize(("button", "ran"), [("Approve", 1), ("Decline", 0)])
async def test_an_approver_decides_a_waiting_call_in_the_queue(
    browser: Browser, tmp_path: Path, button: str, ran: int
) -> None:
    marker = tmp_path / "wiped"
    arguments = {"marker": str(marker), "password": "hunter2"}
    async with explorer(browser, person_registry(), input_timeout=20) as ex:
        base = ex.url.removesuffix("/explorer/")
        call = asyncio.create_task(sdk_call(base, "legacy", opened_link, arguments))
        await ex.page.goto(ex.url)
        row = ex.page.locator('#approvals tr[data-tool="person.wipe"]')
        for _ in range(50):  # the call may reach the desk after the first look: look again
            await ex.page.locator("#view-server").click()
            await expect(ex.page.locator("#approvals")).to_be_visible()
            if await row.count():
                break
            await asyncio.sleep(0.1)
        await expect(row).to_contain_text("person.wipe")
        await expect(row).not_to_contain_text("hunter2")
        await row.get_by_role("button", name=button).click()
        await expect(row.locator(".status")).to_have_text("approved" if ran else "declined")
        result = await asyncio.wait_for(call, 20)
    assert result.is_error is not bool(ran), result
    assert runs(marker) == ran
    assert ex.problems == []


async def test_a_person_approves_on_the_page_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    """The link the client is sent, opened in Chromium: its strict CSP still lets the form post."""
    marker = tmp_path / "wiped"
    links: asyncio.Queue[str] = asyncio.Queue()

    async def shows_the_link(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        await links.put(params.url)
        return types.ElicitResult(action="accept")

    async with explorer(browser, person_registry(), input_timeout=20) as ex:
        base = ex.url.removesuffix("/explorer/")
        call = asyncio.create_task(sdk_call(base, "legacy", shows_the_link, {"marker": str(marker)}))
        link = await asyncio.wait_for(links.get(), 20)
        await ex.page.goto(base + urlsplit(link).path)
        await expect(ex.page.locator("h1")).to_have_text("Approve person.wipe?")
        await ex.page.get_by_role("button", name="Approve").click()
        await expect(ex.page.locator("body")).to_contain_text("Recorded: approve for person.wipe")
        result = await asyncio.wait_for(call, 20)
    assert not result.is_error, result
    assert runs(marker) == 1
    assert ex.unexpected_problems() == []
