"""The explorer's form engine in a real headless Chromium against a real server.

Forms built from JSON Schema (arrays of objects, optional nested objects, enums, date-times) fill
into the exact arguments the module receives; client-side validation shows errors beside fields
and sends nothing; arguments survive a tool switch, a reload and travel in a shared link (never a
token or a secret field); the history lists and re-runs calls.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime
from urllib.parse import quote

import pytest
from playwright.async_api import Browser, expect

from tests._support.browser import ARTIFACTS, explorer
from tests._support.explorer_forms import (
    expected_order,
    fill_order,
    mcp_posts,
    normalized,
    order_form,
    received_by,
    run_and_wait,
)
from tests._support.form_modules import RECEIVED, form_registry
from tests._support.modules import make_executor

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


async def test_a_form_fills_into_the_exact_arguments(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=forms.order")
        await expect(page.locator("#detail h2")).to_have_text("forms.order")
        await fill_order(page)
        expected = await expected_order(page)
        before = len(received_by("forms.order"))
        await run_and_wait(page)
        got = received_by("forms.order")
        assert len(got) == before + 1
        assert normalized(got[-1]) == normalized(expected)
        await order_form(page).locator("fieldset.array").first.evaluate("(node) => node.scrollIntoView()")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-forms.png"))
        assert ex.unexpected_problems() == []


async def test_validation_errors_show_beside_their_fields_and_nothing_is_sent(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=forms.order")
        form = order_form(page)
        await form.get_by_label("customer", exact=True).fill("A")
        await form.get_by_label("include shipping").check()
        await form.get_by_label("zip", exact=True).fill("12")
        await form.get_by_label("contact", exact=True).fill("not-an-email")
        posts = await mcp_posts(page)
        before = list(RECEIVED)

        await page.locator("#run").click()
        summary = form.locator(".form-summary")
        await expect(summary).to_be_visible()
        await expect(summary).to_contain_text("fields need attention")
        customer = form.get_by_label("customer", exact=True)
        await expect(customer).to_have_attribute("aria-invalid", "true")
        await expect(customer).to_be_focused()  # the first field in error takes the focus
        described = (await customer.get_attribute("aria-describedby") or "").split()
        messages = [await page.locator(f"#{ident}").text_content() for ident in described]
        assert "At least 2 characters" in messages
        for label, message in [
            ("priority", "Required"),
            ("deliver_at", "Required"),
            ("zip", "Must match the pattern ^\\d{5}$"),
            ("contact", "Not a valid email"),
        ]:
            control = form.get_by_label(label, exact=True)
            await expect(control).to_have_attribute("aria-invalid", "true")
            error_id = (await control.get_attribute("aria-describedby") or "").split()[-1]
            await expect(page.locator(f"#{error_id}")).to_have_text(message)
        items = form.locator("fieldset.array", has=page.locator("legend", has_text="items"))
        await expect(items).to_have_attribute("aria-invalid", "true")
        await expect(items.locator(".field-error")).to_have_text("At least 1 item")
        await expect(form.get_by_label("street", exact=True)).to_have_attribute("aria-invalid", "true")

        ARTIFACTS.mkdir(exist_ok=True)
        await page.emulate_media(color_scheme="dark")  # the errors read in the dark theme too
        await page.screenshot(path=str(ARTIFACTS / "explorer-forms-errors-dark.png"))
        await page.emulate_media(color_scheme="light")

        # The summary's entries take the keyboard to their fields.
        await summary.get_by_role("button", name=re.compile(r"^contact: ")).click()
        await expect(form.get_by_label("contact", exact=True)).to_be_focused()
        await page.wait_for_timeout(200)
        assert before == RECEIVED
        assert not [url for url in posts if "/mcp" in url or "/call" in url]

        # Fixed, the errors go and the call is made.
        await customer.fill("Ada")
        await form.get_by_label("zip", exact=True).fill("12345")
        await form.get_by_label("contact", exact=True).fill("")
        await form.get_by_label("street", exact=True).fill("s")
        await form.get_by_label("city", exact=True).fill("c")
        await form.get_by_label("priority", exact=True).select_option(label="low")
        await form.get_by_label("deliver_at", exact=True).fill("2026-01-02T03:04")
        await items.get_by_role("button", name="+ Add item").click()
        await items.get_by_label("name", exact=True).fill("pen")
        await run_and_wait(page)
        await expect(summary).to_be_hidden()
        await expect(customer).not_to_have_attribute("aria-invalid", "true")
        assert received_by("forms.order")[-1]["customer"] == "Ada"

        # A rule only the server knows: its answer is shown beside the field it names too.
        await customer.fill("nobody")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_contain_text("Input validation failed")
        await expect(customer).to_have_attribute("aria-invalid", "true")
        error_id = (await customer.get_attribute("aria-describedby") or "").split()[-1]
        await expect(page.locator(f"#{error_id}")).to_contain_text("nobody cannot order")
        await expect(summary).to_contain_text("customer: ")
        assert received_by("forms.order")[-1]["customer"] == "Ada"  # the module never ran
        assert ex.unexpected_problems() == []


async def test_arguments_survive_a_switch_a_reload_and_travel_in_a_link(browser: Browser) -> None:
    token = "explorer-token-" + "k" * 16
    async with explorer(browser, make_executor(form_registry()), allow_execute=True, execute_token=token) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=forms.order")
        form = order_form(page)
        await form.get_by_label("customer", exact=True).fill("Grace")
        await form.get_by_label("priority", exact=True).select_option(label="normal")
        await form.get_by_label("include shipping").check()
        await form.get_by_label("city", exact=True).fill("Arlington")
        await expect(page).to_have_url(re.compile(r"#tool=forms\.order&args=.*Grace"))

        await ex.select("demo.echo")
        await page.get_by_label("text", exact=True).fill("hello")
        await ex.select("forms.order")
        await expect(form.get_by_label("customer", exact=True)).to_have_value("Grace")
        await expect(form.get_by_label("city", exact=True)).to_have_value("Arlington")  # shipping still included

        await page.reload()
        await expect(page.locator("#detail h2")).to_have_text("forms.order")
        await expect(form.get_by_label("customer", exact=True)).to_have_value("Grace")
        await expect(form.get_by_label("priority", exact=True)).to_have_value("1")
        await ex.select("demo.echo")
        await expect(page.get_by_label("text", exact=True)).to_have_value("hello")

        # A secret argument is sent but never kept; the explorer token never leaves memory.
        await ex.select("forms.login")
        await page.get_by_label("user", exact=True).fill("ada")
        await expect(page.get_by_label("password", exact=True)).to_have_attribute("type", "password")
        await page.get_by_label("password", exact=True).fill("hunter2-secret")
        await page.locator("#token").fill(token)
        await run_and_wait(page)
        assert received_by("forms.login")[-1] == {"user": "ada", "password": "hunter2-secret"}
        await page.wait_for_timeout(400)  # past the save's debounce
        stored = await page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
        for secret in (token, "hunter2-secret"):
            assert secret not in stored and secret not in page.url
        assert '"user":"ada"' in stored.replace("\\", "")

        # A shared link fills the form in a browser that never saw these arguments.
        shared = {
            "customer": "Linus",
            "priority": "low",
            "items": [{"name": "cable", "qty": 2}],
            "deliver_at": "2026-05-06T07:08:09Z",
        }
        await page.evaluate("localStorage.clear()")
        await page.goto("about:blank")
        await page.goto(ex.url + "#tool=forms.order&args=" + quote(json.dumps(shared)))
        await expect(form.get_by_label("customer", exact=True)).to_have_value("Linus")
        await expect(form.locator("fieldset.item")).to_have_count(1)
        await expect(form.get_by_label("qty", exact=True)).to_have_value("2")
        await page.locator("#token").fill(token)
        await run_and_wait(page)
        got = received_by("forms.order")[-1]
        # Untouched, the date-time goes back exactly as the link wrote it (the module sees that instant).
        assert datetime.fromisoformat(got["deliver_at"]) == datetime.fromisoformat("2026-05-06T07:08:09+00:00")
        assert {key: got[key] for key in ("customer", "priority", "items")} == {
            "customer": "Linus",
            "priority": "low",
            "items": [{"name": "cable", "qty": 2}],
        }
        assert ex.unexpected_problems() == []


async def test_history_lists_calls_and_reruns_one(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=forms.ticket")
        await page.get_by_label("title", exact=True).fill("first")
        await page.get_by_label("kind", exact=True).select_option(label="bug")
        await run_and_wait(page)
        await page.get_by_label("title", exact=True).fill("second")
        await run_and_wait(page)
        calls = len(received_by("forms.ticket"))

        # From the keyboard: the header's History button, then Enter on the newest call's Re-run.
        await page.locator("#history-open").focus()
        await page.keyboard.press("Enter")
        dialog = page.locator("#history-dialog")
        await expect(dialog).to_be_visible()
        entries = dialog.locator(".history-item")
        await expect(entries).to_have_count(2)
        await expect(entries.nth(0)).to_contain_text("forms.ticket")
        await expect(entries.nth(0).locator(".status")).to_have_text("ok")
        await expect(entries.nth(0).locator(".history-args")).to_contain_text('"title":"second"')
        await expect(entries.nth(1).locator(".history-args")).to_contain_text('"title":"first"')
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-history.png"))

        # Re-run the older call: the form gets its arguments back and the tool runs again.
        await entries.nth(1).get_by_role("button", name=re.compile("^Re-run")).focus()
        await page.keyboard.press("Enter")
        await expect(dialog).to_be_hidden()
        await expect(page.get_by_label("title", exact=True)).to_have_value("first")
        await expect(page.locator("#detail .status")).to_have_class(re.compile(r"\bgood\b"))
        for _ in range(50):
            if len(received_by("forms.ticket")) == calls + 1:
                break
            await asyncio.sleep(0.1)
        assert len(received_by("forms.ticket")) == calls + 1
        assert received_by("forms.ticket")[-1]["title"] == "first"

        await page.locator("#history-open").click()
        await expect(entries).to_have_count(3)
        await expect(entries.nth(0).locator(".history-args")).to_contain_text('"title":"first"')
        await page.reload()  # the history is kept by the browser
        await page.locator("#history-open").click()
        await expect(entries).to_have_count(3)
        await dialog.get_by_role("button", name="Clear").click()
        await expect(entries).to_have_count(0)
        await expect(dialog.locator(".history-empty")).to_be_visible()
        await page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()
        assert ex.unexpected_problems() == []
