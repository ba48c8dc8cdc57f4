"""The explorer's form engine and comfort features in a real headless Chromium against a real server.

Forms built from JSON Schema (arrays of objects, optional nested objects, enums, date-times) fill
into the exact arguments the module receives; client-side validation shows errors beside fields
and sends nothing; arguments survive a tool switch, a reload and travel in a shared link (never a
token or a secret field); the history lists and re-runs calls; "Copy as" curl and Python commands
run for real; result images zoom; a form is filled and run from the keyboard alone.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.async_api import Browser, Page, expect

from tests._support.browser import ARTIFACTS, explorer
from tests._support.form_modules import RECEIVED, form_registry
from tests._support.modules import make_executor

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]


def order_form(page: Page) -> Any:
    return page.locator('form[aria-label="Arguments for forms.order"]')


async def local_offset(page: Page, y: int, mo: int, d: int, h: int, mi: int, s: int) -> str:
    """The browser's UTC offset at that local time, as ISO 8601 writes it (+HH:MM)."""
    minutes = int(await page.evaluate(f"-new Date({y}, {mo - 1}, {d}, {h}, {mi}, {s}).getTimezoneOffset()"))
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


async def mcp_posts(page: Page) -> list[str]:
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    return posts


async def fill_order(page: Page) -> None:
    """Fills forms.order: two items (added, one reordered above the other), a third added and removed,
    the optional shipping address included, enums chosen, a date-time typed."""
    form = order_form(page)
    await form.get_by_label("customer", exact=True).fill("Ada")
    items = form.locator("fieldset.array", has=page.locator("legend", has_text="items"))
    add = items.get_by_role("button", name="+ Add item")
    await add.click()
    first = items.locator("fieldset.item").nth(0)
    await expect(first.get_by_label("name", exact=True)).to_be_focused()  # adding moves the focus into the new item
    await first.get_by_label("name", exact=True).fill("pen")
    await first.get_by_label("qty", exact=True).fill("3")
    await add.click()
    await items.locator("fieldset.item").nth(1).get_by_label("name", exact=True).fill("ink")
    await items.get_by_role("button", name="Move item 2 of items up").click()
    await expect(items.locator("fieldset.item legend")).to_have_text(["items item 1", "items item 2"])
    await add.click()
    await expect(items.locator("fieldset.item")).to_have_count(3)
    await items.get_by_role("button", name="Remove item 3 of items").click()
    await expect(items.locator("fieldset.item")).to_have_count(2)

    await expect(form.get_by_label("priority", exact=True)).to_have_js_property("tagName", "SELECT")
    await form.get_by_label("priority", exact=True).select_option(label="high")
    await expect(form.get_by_label("size", exact=True)).to_have_value("1")  # the default, "m"
    await form.get_by_label("size", exact=True).select_option(label="Large (l)")  # oneOf consts keep their titles
    deliver = form.get_by_label("deliver_at", exact=True)
    await expect(deliver).to_have_attribute("type", "datetime-local")
    await deliver.fill("2026-03-04T05:06:07")

    street = form.get_by_label("street", exact=True)
    await expect(street).to_be_hidden()  # an optional object is left out until included
    await form.get_by_label("include shipping").check()
    await street.fill("1 Main St")
    await form.get_by_label("city", exact=True).fill("Springfield")
    await expect(form.get_by_label("zip", exact=True)).to_have_attribute("placeholder", "12345")  # the example
    await form.get_by_label("zip", exact=True).fill("54321")
    await form.get_by_label("gift", exact=True).check()
    await expect(form.get_by_label("contact", exact=True)).to_have_attribute("type", "email")
    await form.get_by_label("contact", exact=True).fill("ada@example.com")


async def expected_order(page: Page) -> dict[str, Any]:
    return {
        "customer": "Ada",
        "items": [{"name": "ink", "qty": 1}, {"name": "pen", "qty": 3}],
        "priority": "high",
        "size": "l",
        "deliver_at": "2026-03-04T05:06:07" + await local_offset(page, 2026, 3, 4, 5, 6, 7),
        "shipping": {"street": "1 Main St", "city": "Springfield", "zip": "54321"},
        "gift": True,
        "contact": "ada@example.com",
    }


def received_by(tool: str) -> list[dict[str, Any]]:
    return [arguments for name, arguments in RECEIVED if name == tool]


def normalized(arguments: dict[str, Any]) -> dict[str, Any]:
    """A received date-time compared as the instant it names (the module sees a datetime)."""
    out = dict(arguments)
    if isinstance(out.get("deliver_at"), str):
        out["deliver_at"] = datetime.fromisoformat(out["deliver_at"]).isoformat()
    return out


async def run_and_wait(page: Page) -> None:
    await page.locator("#run").click()
    await expect(page.locator("#detail .status")).to_have_class(re.compile(r"\bgood\b"))


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


async def shell(*command: str) -> tuple[int, str, str]:
    """A subprocess without blocking the loop the server runs on."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, out.decode(), err.decode()


def reply_of(text: str) -> dict[str, Any]:
    """A JSON-RPC reply sent as JSON or as server-sent events."""
    if not text.lstrip().startswith("{"):
        text = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")][-1]
    reply = json.loads(text)
    assert isinstance(reply, dict)
    return reply


def structured(reply: dict[str, Any]) -> Any:
    """A tools/call result's structured content (or its one text block as JSON, when there is no output schema)."""
    result = reply["result"]
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])


async def test_copy_as_curl_python_and_json_rpc_run_for_real(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ex.url.split("/explorer")[0])
        await page.goto(ex.url + "#tool=forms.order")
        await fill_order(page)
        expected = await expected_order(page)
        form = order_form(page)

        await form.get_by_role("button", name="Copy as curl").click()
        dialog = page.locator("#copy-dialog")
        await expect(dialog).to_be_visible()
        await expect(page.locator("#copy-status")).to_have_text("Copied to the clipboard.")
        command = await page.locator("#copy-text").input_value()
        assert await page.evaluate("navigator.clipboard.readText()") == command
        assert command.startswith("curl ") and "-H 'Mcp-Method: tools/call'" in command
        assert "-H 'Mcp-Name: forms.order'" in command and "MCP-Protocol-Version: 2026-07-28" in command
        assert "Authorization" not in command  # no auth on this server: no header, and never a token
        await expect(page.locator("#copy-text")).to_be_focused()  # selected, ready for Ctrl+C
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-copy.png"))
        await page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)
        await expect(form.get_by_role("button", name="Copy as curl")).to_be_focused()

        before = len(received_by("forms.order"))
        code, out, err = await shell("bash", "-c", command)
        assert code == 0, err
        reply = reply_of(out)
        assert "error" not in reply, reply
        assert normalized(received_by("forms.order")[-1]) == normalized(expected)
        assert len(received_by("forms.order")) == before + 1
        assert normalized(structured(reply)["received"]) == normalized(expected)

        await form.get_by_role("button", name="Copy as Python").click()
        script = await page.locator("#copy-text").input_value()
        await page.keyboard.press("Escape")
        assert "from mcp import Client" in script
        code, out, err = await shell(sys.executable, "-c", script)
        assert code == 0, err
        assert len(received_by("forms.order")) == before + 2
        assert normalized(received_by("forms.order")[-1]) == normalized(expected)
        assert '"customer":"Ada"' in out

        await form.get_by_role("button", name="Copy as JSON-RPC").click()
        request = json.loads(await page.locator("#copy-text").input_value())
        await page.keyboard.press("Escape")
        assert request["method"] == "tools/call" and request["params"]["name"] == "forms.order"
        assert normalized(request["params"]["arguments"]) == normalized(expected)
        assert request["params"]["_meta"] == {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }

        # An argument mirrored in a header (x-mcp-header) goes in the command's Mcp-Param-* header too.
        await ex.select("forms.routed")
        await page.get_by_label("region", exact=True).fill("eu-west")
        await page.get_by_label("text", exact=True).fill("routed")
        await page.get_by_role("button", name="Copy as curl").click()
        command = await page.locator("#copy-text").input_value()
        await page.keyboard.press("Escape")
        assert "-H 'Mcp-Param-Region: eu-west'" in command
        code, out, err = await shell("bash", "-c", command)
        assert code == 0, err
        assert structured(reply_of(out))["received"] == {"region": "eu-west", "text": "routed"}
        assert received_by("forms.routed")[-1] == {"region": "eu-west", "text": "routed"}
        assert ex.unexpected_problems() == []


async def test_copy_as_uses_a_token_placeholder_and_falls_back_to_a_selectable_text(browser: Browser) -> None:
    token = "explorer-token-" + "z" * 16
    async with explorer(browser, make_executor(form_registry()), allow_execute=True, execute_token=token) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.echo")
        await page.get_by_label("text", exact=True).fill("hi")
        await page.locator("#token").fill(token)
        # No clipboard permission here: the text stays on screen, selected.
        await page.evaluate("() => { navigator.clipboard.writeText = () => Promise.reject(new Error('denied')); }")
        await page.get_by_role("button", name="Copy as curl").click()
        await expect(page.locator("#copy-status")).to_contain_text("press Ctrl+C")
        command = await page.locator("#copy-text").input_value()
        selected = await page.locator("#copy-text").evaluate("t => t.value.slice(t.selectionStart, t.selectionEnd)")
        assert selected == command
        assert token not in command and '-H "Authorization: Bearer $TOKEN"' in command
        await page.keyboard.press("Escape")
        code, out, err = await shell("bash", "-c", command)
        assert code == 0, err
        assert '"result"' not in out  # without the token the server refuses
        code, out, err = await shell("env", f"TOKEN={token}", "bash", "-c", command)
        assert code == 0, err
        assert structured(reply_of(out)) == {"echo": "hi"}
        await page.get_by_role("button", name="Copy as Python").click()
        script = await page.locator("#copy-text").input_value()
        assert token not in script and 'os.environ["TOKEN"]' in script
        await page.keyboard.press("Escape")
        code, out, err = await shell("env", f"TOKEN={token}", sys.executable, "-c", script)
        assert code == 0, err
        assert "'echo': 'hi'" in out
        assert ex.unexpected_problems(r"status of 401") == []


async def test_a_result_image_zooms_and_escape_closes_it(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.media")
        await run_and_wait(page)
        image = page.locator("#output img").first
        await expect(image).to_be_visible()
        await expect(image).to_have_attribute("role", "button")
        await image.click()
        dialog = page.locator("#zoom-dialog")
        await expect(dialog).to_be_visible()
        zoomed = dialog.locator("img.zoomed")
        assert await zoomed.evaluate(
            "(img) => img.complete && img.naturalWidth > 0 && img.getBoundingClientRect().width >= 256"
        )
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-zoom.png"))
        await page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)
        await expect(image).to_be_focused()
        await page.keyboard.press("Enter")  # and from the keyboard
        await expect(dialog).to_be_visible()
        await page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)
        assert ex.unexpected_problems() == []


async def test_a_form_is_filled_and_run_from_the_keyboard_alone(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url)
        await expect(page.locator('#tool-list a[data-name="forms.ticket"]')).to_be_visible()
        await page.keyboard.press("/")
        await page.keyboard.type("ticket")
        await page.keyboard.press("Enter")  # the one match opens
        await expect(page.locator("#detail h2")).to_have_text("forms.ticket")

        async def tab_to(label: str, limit: int = 40) -> None:
            for _ in range(limit):
                await page.keyboard.press("Tab")
                name = await page.evaluate(
                    "() => { const a = document.activeElement; return (a.labels && a.labels[0] && a.labels[0].textContent)"
                    " || a.getAttribute('aria-label') || a.textContent }"
                )
                if name == label:
                    return
            raise AssertionError(f"Tab never reached {label!r}")

        await tab_to("title")
        await page.keyboard.type("keyboard only")
        await tab_to("kind")
        await page.keyboard.press("ArrowDown")
        await page.keyboard.press("ArrowDown")
        await expect(page.get_by_label("kind", exact=True)).to_have_value("1")  # "idea"
        await tab_to("count")
        await page.keyboard.press("Control+A")
        await page.keyboard.type("4")
        await tab_to("+ Add item")
        await page.keyboard.press("Enter")
        await expect(page.get_by_label("steps item 1")).to_be_focused()
        await page.keyboard.type("press Tab")
        focus_ring = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert focus_ring != "none"  # focus is visible
        before = len(received_by("forms.ticket"))
        await page.keyboard.press("Enter")  # Enter in a text field submits the form
        await expect(page.locator("#detail .status")).to_have_class(re.compile(r"\bgood\b"))
        assert received_by("forms.ticket")[before:] == [
            {"title": "keyboard only", "kind": "idea", "count": 4, "steps": ["press Tab"]}
        ]
        assert ex.unexpected_problems() == []
