"""The explorer's views of the rest of the server, over MCP, in headless Chromium, in both eras.

Resources (a static one read; a template whose variable is completed by ``completion/complete``,
then read), prompts (arguments completed, the rendered messages; a prompt that asks the person
first), the server itself (its info and capabilities in the chosen era), and a module resource
refused when execution is off. The server is the conformance example registry with its prompts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from apcore import Registry
from playwright.async_api import Browser, Page, expect

from tests._support.browser import ARTIFACTS, explorer

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "conformance"
ERAS = ["2026-07-28", "2025-11-25"]


def conformance_registry() -> Registry:
    registry = Registry(extensions_dir=str(EXAMPLES / "extensions"))
    registry.discover()
    return registry


async def open_view(page: Page, url: str, era: str, view: str) -> None:
    await page.goto(url)
    await page.locator("#era").select_option(era)
    await page.locator(f"#view-{view.lower()}").click()
    await expect(page.locator(f"#view-{view.lower()}")).to_have_attribute("aria-selected", "true")


@pytest.mark.parametrize("era", ERAS)
async def test_resources_are_listed_read_and_their_templates_completed(browser: Browser, era: str) -> None:
    settings = {"allow_execute": True, "prompts_dir": str(EXAMPLES / "prompts")}
    async with explorer(browser, conformance_registry(), **settings) as ex:
        page = ex.page
        await open_view(page, ex.url, era, "Resources")
        await expect(page.locator("#side-count")).to_contain_text("templates")
        await expect(page.locator("#tool-list")).to_be_hidden()

        await page.locator('#side-list a[data-name="static-text"]').click()
        await page.locator("#read-resource").click()
        await expect(page.locator("#read-result figcaption")).to_have_text("test://static-text · text/plain")
        await expect(page.locator("#read-result pre.out").first).to_contain_text("static")
        await page.locator("#read-result details.protocol-view summary").click()
        await expect(page.locator("#read-result .protocol")).to_contain_text('"method": "resources/read"')

        await page.locator('#side-list a[data-name="template-data"]').click()
        field = page.locator("#detail form input").first
        await field.press_sequentially("4")
        options = page.locator("#detail datalist option")
        await expect(options).to_have_count(1)
        assert await options.first.get_attribute("value") == "456"
        await field.fill("123")
        await expect(page.locator("#expanded-uri")).to_have_text("test://template/123/data")
        await page.keyboard.press("Enter")  # submits the form: keyboard only
        await expect(page.locator("#read-result")).to_contain_text("Data for ID: 123")
        await page.screenshot(path=str(ARTIFACTS / f"explorer-resources-{era}.png"), full_page=True)
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_complete_their_arguments_and_render(browser: Browser, era: str) -> None:
    settings = {"allow_execute": True, "prompts_dir": str(EXAMPLES / "prompts")}
    async with explorer(browser, conformance_registry(), **settings) as ex:
        page = ex.page
        await open_view(page, ex.url, era, "Prompts")
        await page.locator('#side-list a[data-name="test_prompt_with_arguments"]').click()
        arg1 = page.locator("#detail form input").nth(0)
        await arg1.press_sequentially("pa")
        options = page.locator("#detail datalist").first.locator("option")
        await expect(options).to_have_count(3)
        assert [await o.get_attribute("value") for o in await options.all()] == ["paris", "park", "party"]
        await arg1.fill("paris")
        await page.locator("#get-prompt").click()
        await expect(page.locator("#prompt-result")).to_contain_text("Required: arg2")
        await page.locator("#detail form input").nth(1).fill("two")
        await page.locator("#get-prompt").click()
        message = page.locator("#prompt-result .prompt-message")
        await expect(message).to_have_count(1)
        await expect(message.locator(".chip.role")).to_have_text("user")
        await expect(message).to_contain_text("Prompt with arguments: arg1='paris', arg2='two'")

        # A prompt that asks the person before it renders: the same dialog as a tool's elicitation.
        await page.locator('#side-list a[data-name="test_input_required_result_prompt"]').click()
        await page.locator("#get-prompt").click()
        dialog = page.locator("#elicit-dialog")
        await expect(dialog).to_be_visible()
        await expect(dialog.locator("#elicit-message")).to_have_text("What context should the prompt use?")
        await dialog.locator("input").first.fill("the weekly report")
        await page.screenshot(path=str(ARTIFACTS / f"explorer-prompt-input-{era}.png"), full_page=True)
        await dialog.locator("#elicit-accept").click()
        await expect(page.locator("#prompt-result .prompt-message")).to_contain_text(
            "Use this context: the weekly report"
        )
        await page.screenshot(path=str(ARTIFACTS / f"explorer-prompts-{era}.png"), full_page=True)
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_the_server_view_shows_its_info_and_capabilities_in_the_chosen_era(browser: Browser, era: str) -> None:
    async with explorer(browser, conformance_registry(), prompts_dir=str(EXAMPLES / "prompts")) as ex:
        page = ex.page
        await open_view(page, ex.url, era, "Server")
        facts = page.locator("#server-info")
        await expect(facts).to_contain_text("apcore-mcp")
        await expect(facts).to_contain_text(era)
        await expect(facts).to_contain_text("stateless" if era == "2026-07-28" else "session ")
        capabilities = page.locator("#server-capabilities")
        for capability in ("tools", "resources", "prompts", "completions"):
            await expect(capabilities).to_contain_text(f'"{capability}"')
        await expect(page.locator("#ready-status")).to_have_text("Readiness: ready")
        card = page.locator("#server-card")  # what a host reads before connecting, as served
        await expect(card.locator("a")).to_have_attribute("href", "/mcp/server-card")
        await expect(card.locator("pre.json")).to_contain_text('"streamable-http"')
        await page.screenshot(path=str(ARTIFACTS / f"explorer-server-{era}.png"), full_page=True)
        # Back to the tools: the list is there again.
        await page.locator("#view-tools").click()
        await expect(page.locator("#tool-list")).to_be_visible()
        await expect(ex.visible_tools().first).to_be_visible()
        assert ex.unexpected_problems() == []


async def test_a_module_resource_is_not_read_when_execution_is_off(browser: Browser) -> None:
    async with explorer(browser, conformance_registry()) as ex:  # allow_execute off
        page = ex.page
        await open_view(page, ex.url, "2026-07-28", "Resources")
        await page.locator('#side-list a[data-name="static-text"]').click()
        await page.locator("#read-resource").click()
        await expect(page.locator("#read-result .failure")).to_contain_text("--allow-execute")
        assert ex.unexpected_problems(r"403") == []


@pytest.mark.parametrize("era", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_the_older_protocol_versions_the_page_offers_call_tools_too(browser: Browser, era: str) -> None:
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.echo")
        await expect(page.locator("#era option")).to_have_count(5)  # every version the server speaks
        await page.locator("#era").select_option(era)
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        await page.locator("#detail form input").first.fill(f"over {era}")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_contain_text(f"over {era}")
        log = page.locator("#protocol")
        await expect(log).to_contain_text('"method": "initialize"')
        await expect(log).to_contain_text(f'"protocolVersion": "{era}"')
        # No prompts in this registry: the view says so instead of asking (an unknown method).
        await page.locator("#view-prompts").click()
        await expect(page.locator("#view-none")).to_have_text("This server offers no prompts.")
        assert ex.unexpected_problems() == []
