"""The explorer is readable and usable without a mouse, in both color schemes (headless Chromium).

Contrast is measured on the rendered page, not on the CSS: every visible piece of text, its
computed color against the first opaque background behind it, must reach WCAG AA (4.5:1; 3:1
for large text). Every control has an accessible name. Each view is reached and used from the
keyboard alone.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from playwright.async_api import Browser, Page, expect

from tests._support.browser import ARTIFACTS, explorer

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium

# Runs in the page: each text node's element, its color and the background it is drawn on.
CONTRAST = """
() => {
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c[3] >= 0.99) return c;
    }
    return rgba(getComputedStyle(document.documentElement).backgroundColor);
  };
  const seen = new Set(), problems = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim();
    const node = walker.currentNode.parentElement;
    if (!text || !node || seen.has(node)) continue;
    seen.add(node);
    const style = getComputedStyle(node);
    const box = node.getBoundingClientRect();
    if (style.visibility === "hidden" || box.width === 0 || box.height === 0 || node.closest("[hidden], .sr-only")) continue;
    if (node.closest("option, [disabled]")) continue;  // native option lists and disabled controls are exempt (WCAG 1.4.3)
    const fg = rgba(style.color), bg = background(node);
    const blended = [0, 1, 2].map((i) => fg[i] * fg[3] + bg[i] * (1 - fg[3]));
    const [hi, lo] = [lum(blended), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed) problems.push(`${ratio.toFixed(2)} < ${needed}: "${text.slice(0, 40)}" (${node.tagName.toLowerCase()}.${node.className})`);
  }
  return problems;
}
"""

# Runs in the page: visible controls without an accessible name.
UNNAMED = """
() => [...document.querySelectorAll("button, input, select, textarea, a[href], [role=tab]")]
  .filter((n) => n.getClientRects().length && !n.closest("[hidden]"))
  .filter((n) => {
    if (n.getAttribute("aria-label") || n.getAttribute("aria-labelledby") || n.title) return false;
    if (["BUTTON", "A"].includes(n.tagName) || n.getAttribute("role") === "tab") return !n.textContent.trim();
    return !(n.id && document.querySelector(`label[for="${CSS.escape(n.id)}"]`)) && !n.closest("label");
  })
  .map((n) => n.outerHTML.slice(0, 120))
"""


async def problems_on(page: Page) -> list[str]:
    found: list[str] = await page.evaluate(CONTRAST)
    unnamed: list[str] = await page.evaluate(UNNAMED)
    return found + [f"no accessible name: {html}" for html in unnamed]


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_every_view_is_readable_and_named_in_both_schemes(
    browser: Browser, scheme: Literal["light", "dark"]
) -> None:
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        await page.emulate_media(color_scheme=scheme)
        seen: dict[str, Any] = {}
        await page.goto(ex.url + "#tool=admin.secret")  # destructive and approval chips, the arguments form
        await expect(page.locator("#detail h2")).to_have_text("admin.secret")
        seen["tool"] = await problems_on(page)
        await page.goto(ex.url + "#tool=demo.echo")
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        await page.locator("#detail form input").first.fill("hello")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_contain_text("hello")
        seen["result"] = await problems_on(page)
        await page.get_by_role("tab", name="Protocol").click()
        seen["protocol"] = await problems_on(page)
        for view in ("resources", "prompts", "server"):
            await page.locator(f"#view-{view}").click()
            await expect(page.locator(f"#view-{view}")).to_have_attribute("aria-selected", "true")
            await page.wait_for_load_state("networkidle")
            seen[view] = await problems_on(page)
        await page.screenshot(path=str(ARTIFACTS / f"explorer-{scheme}.png"), full_page=True)
        assert {view: found for view, found in seen.items() if found} == {}
        assert ex.unexpected_problems() == []


async def test_a_tool_is_found_filled_run_and_its_protocol_read_from_the_keyboard(browser: Browser) -> None:
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url)
        await expect(ex.visible_tools().first).to_be_visible()
        await page.keyboard.press("/")
        await page.keyboard.type("demo.echo")
        await page.keyboard.press("Enter")  # the one match opens
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        field = page.locator("#detail form input").first
        for _ in range(40):  # Tab until the first argument field has the focus (bounded)
            if await field.evaluate("(n) => n === document.activeElement"):
                break
            await page.keyboard.press("Tab")
        await expect(field).to_be_focused()
        await page.keyboard.type("typed")
        await page.keyboard.press("Control+Enter")
        await expect(page.locator("#output")).to_contain_text("typed")
        tab = page.get_by_role("tab", name="Result")
        await tab.focus()
        await page.keyboard.press("ArrowRight")  # the Protocol tab
        await expect(page.get_by_role("tab", name="Protocol")).to_be_focused()
        await expect(page.locator("#protocol")).to_contain_text('"method": "tools/call"')
        # The views row: arrows move between Tools, Resources, Prompts and Server.
        await page.locator("#view-tools").focus()
        await page.keyboard.press("ArrowRight")
        await expect(page.locator("#view-resources")).to_be_focused()
        await expect(page.locator("#view-resources")).to_have_attribute("aria-selected", "true")
        assert ex.unexpected_problems() == []
