"""The explorer's comfort features in a real headless Chromium against a real server: "Copy as"
curl and Python commands run for real, with a token placeholder; result images zoom; a form is
filled and run from the keyboard alone.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests._support.browser import ARTIFACTS, explorer
from tests._support.explorer_forms import (
    ROOT,
    expected_order,
    fill_order,
    normalized,
    order_form,
    received_by,
    run_and_wait,
)
from tests._support.form_modules import form_registry
from tests._support.modules import make_executor

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium


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
