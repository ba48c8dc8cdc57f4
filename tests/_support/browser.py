"""The explorer page in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

``launched_browser`` backs the ``browser`` fixture (conftest.py); ``explorer`` serves the explorer
with uvicorn on 127.0.0.1 in the test's event loop and opens it in a fresh browser context that
records console errors, page errors and Content-Security-Policy violations.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.modules import make_executor
from tests._support.sessions import running_http

try:
    from playwright.async_api import Browser, ConsoleMessage, Dialog, Page, async_playwright, expect

    HAS_PLAYWRIGHT = True
except ImportError:  # reported by the ``browser`` fixture
    HAS_PLAYWRIGHT = False

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Reports every CSP violation into the console (init scripts run outside the page's CSP).
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error("CSP violation: " + event.violatedDirective + " " + event.blockedURI);
});
"""


@contextlib.asynccontextmanager
async def launched_browser() -> AsyncIterator[Browser]:
    """Debian's headless Chromium through Playwright; fails the test, saying what to install, if either is missing."""
    if not HAS_PLAYWRIGHT:
        pytest.fail("Playwright is not installed: pip install 'playwright>=1.49' (browsers are not downloaded)")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Explorer:
    page: Page
    url: str
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.problems.append(f"{message.text} ({message.location.get('url', '')})")

    async def on_dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        await dialog.dismiss()

    def unexpected_problems(self, *allowed: str) -> list[str]:
        """Problems other than the failed-resource notices Chrome logs for expected 4xx answers."""
        return [problem for problem in self.problems if not any(re.search(pattern, problem) for pattern in allowed)]

    def visible_tools(self) -> Any:
        return self.page.locator("#tool-list li:not([hidden]) .tool-name")

    async def select(self, name: str) -> None:
        await self.page.locator(f'#tool-list a[data-name="{name}"]').click()
        await expect(self.page.locator("#detail h2")).to_have_text(name)


@contextlib.asynccontextmanager
async def explorer(browser: Browser, executor: Any = None, **settings: Any) -> AsyncIterator[Explorer]:
    """The explorer page opened in a fresh browser context against a server on 127.0.0.1."""
    bridge = Bridge.build(executor or make_executor(), Settings(explorer=True, **settings))
    async with running_http(bridge) as url, explorer_at(browser, url) as opened:
        yield opened


@contextlib.asynccontextmanager
async def explorer_at(browser: Browser, base_url: str) -> AsyncIterator[Explorer]:
    """The explorer page of the server at ``base_url`` (127.0.0.1), in a fresh browser context."""
    assert base_url.startswith("http://127.0.0.1:")
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        page = await context.new_page()
        page.set_default_timeout(10_000)
        await page.add_init_script(CSP_LISTENER)
        opened = Explorer(page, f"{base_url}/explorer/")
        page.on("console", opened.on_console)
        page.on("pageerror", lambda error: opened.problems.append(f"page error: {error}"))
        page.on("dialog", opened.on_dialog)
        yield opened
    finally:
        await context.close()


ERAS = ["2026-07-28", "2025-11-25"]
"""The protocol eras the page speaks (its header selector), newest first."""


async def choose_era(page: Page, era: str) -> None:
    """Picks the page's protocol era (kept in localStorage, so it holds across reloads)."""
    await page.locator("#era").select_option(era)
    await expect(page.locator("#era")).to_have_value(era)


async def protocol_log(page: Page) -> list[dict[str, Any]]:
    """The Protocol view of the last call: each entry's kind, direction, time offset and JSON (parsed)."""
    entries: list[dict[str, Any]] = await page.evaluate(
        """() => [...document.querySelectorAll("#protocol > li")].map((li) => ({
            kind: li.dataset.kind, dir: li.className.replace("msg ", ""),
            what: li.querySelector(".msg-what").textContent, time: li.querySelector(".msg-time").textContent,
            json: li.querySelector("pre.json") ? li.querySelector("pre.json").textContent : null,
            note: li.querySelector("pre.out") ? li.querySelector("pre.out").textContent : null }))"""
    )
    for entry in entries:
        entry["message"] = json.loads(entry.pop("json")) if entry["json"] is not None else None
    return entries
