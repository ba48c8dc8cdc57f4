"""The explorer's Skills view in headless Chromium: listed, SKILL.md rendered as text, never as HTML.

A hand-written skill whose Markdown carries a <script>, an <img onerror> and a javascript: link is
opened in both eras: the page shows them as text, runs none of them (no dialog, no console error,
no CSP violation), says the file matches its listed digest, and shows its frontmatter and files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests._support.browser import ERAS, explorer
from tests._support.skills import write_skill

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium

HOSTILE = (
    "# Using the tools\n\n"
    '<script>alert("script")</script>\n\n'
    '<img src=x onerror="alert(1)">\n\n'
    "[click](javascript:alert(2)) and [docs](https://example.com/docs)\n"
)


@pytest.mark.parametrize("era", ERAS)
async def test_a_skill_is_listed_and_its_markdown_rendered_as_text(browser: Browser, era: str, tmp_path: Path) -> None:
    write_skill(tmp_path, "careful", body=HOSTILE)
    settings = {"skills": True, "skills_dir": str(tmp_path), "allow_execute": True}
    async with explorer(browser, **settings) as ex:
        page = ex.page
        await page.goto(ex.url)
        await page.locator("#era").select_option(era)
        await page.locator("#view-skills").click()
        await page.locator('#side-list a[data-name="careful"]').click()
        await expect(page.locator("#detail h2")).to_have_text("careful")
        await expect(page.locator("#skill-check")).to_have_text("SKILL.md matches its listed SHA-256 digest and size")
        body = page.locator("#skill-body .markdown")
        await expect(body.locator("h3, h4").first).to_have_text("Using the tools")
        await expect(body).to_contain_text('<script>alert("script")</script>')
        await expect(body).to_contain_text('<img src=x onerror="alert(1)">')
        assert await body.locator("script, img").count() == 0
        assert await body.locator("a").count() == 1  # the https link; javascript: stays text
        await expect(page.locator("#skill-frontmatter")).to_contain_text("Hand-written careful")
        await expect(page.locator("#skill-files")).to_contain_text("skill://careful/SKILL.md")
    assert ex.dialogs == []
    assert ex.unexpected_problems() == []
