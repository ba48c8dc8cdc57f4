"""The explorer page in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

Each test serves the explorer with uvicorn on 127.0.0.1 in the test's event loop and checks
what a user sees: the tool list and its filter, a tool's schemas, the generated form, running a
tool (result, validation error), the disabled state, and that untrusted text stays text. Any
console error, uncaught page error or Content-Security-Policy violation fails the test.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

import pytest
from apcore import Registry
from playwright.async_api import Browser, expect
from pydantic import BaseModel, Field

from tests._support.browser import ARTIFACTS, explorer
from tests._support.modules import EXPECTED_TOOLS, Echo, make_executor

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium

PAYLOAD = "<img src=x onerror=alert(1)><script>alert(2)</script>"


async def test_list_filter_form_run_and_validation(browser: Browser) -> None:
    async with explorer(browser, allow_execute=True) as ex:
        page = ex.page
        response = await page.goto(ex.url)
        assert response is not None and response.status == 200
        assert "sha256-" in (await response.header_value("content-security-policy") or "")

        await expect(page.locator("#server-name")).to_have_text("apcore-mcp")
        await expect(page.locator("#exec-badge")).to_have_text("execution enabled")
        await expect(ex.visible_tools()).to_have_count(len(EXPECTED_TOOLS))
        assert sorted(await ex.visible_tools().all_text_contents()) == EXPECTED_TOOLS
        await expect(page.locator("#count")).to_have_text(f"{len(EXPECTED_TOOLS)} tools")
        secret = page.locator('#tool-list a[data-name="admin.secret"]')
        await expect(secret.locator(".chip.destructive")).to_have_text("destructive")
        await expect(secret.locator(".chip.approval")).to_have_text("needs approval")

        await page.locator("#filter").press_sequentially("path")
        await expect(ex.visible_tools()).to_have_text(["demo.path"])
        await expect(page.locator("#count")).to_have_text(f"1 of {len(EXPECTED_TOOLS)} tools")
        await page.locator("#filter").fill("")
        await expect(ex.visible_tools()).to_have_count(len(EXPECTED_TOOLS))

        # Keyboard: "/" focuses the filter, arrows walk the matches, Enter opens one.
        await page.locator("#detail").focus()
        await page.keyboard.press("/")
        await expect(page.locator("#filter")).to_be_focused()
        await page.keyboard.type("echo")
        await expect(ex.visible_tools()).to_have_text(["demo.denied", "demo.echo"])
        await page.keyboard.press("ArrowDown")
        await page.keyboard.press("ArrowDown")
        await expect(page.locator('#tool-list a[data-name="demo.echo"]')).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        assert page.url.endswith("#tool=demo.echo")
        await page.locator("#filter").fill("")
        detail = page.locator("#detail")
        await expect(detail.locator(".desc")).to_have_text("Echo the text back")
        documentation = detail.locator(".doc.markdown")  # the module's Markdown, rendered
        await expect(documentation).to_contain_text("Echo repeats text times times.")
        await expect(documentation.locator("code")).to_have_text(["text", "times"])
        await detail.get_by_text("Input schema").click()
        input_schema = detail.locator("details", has_text="Input schema").locator("pre")
        await expect(input_schema).to_be_visible()
        assert json.loads(await input_schema.text_content() or "")["required"] == ["text"]
        output_schema = detail.locator("details", has_text="Output schema").locator("pre")
        assert "EchoOut" in (await output_schema.text_content() or "")

        text, times = page.get_by_label("text", exact=True), page.get_by_label("times", exact=True)
        await expect(times).to_have_value("1")  # the default is pre-filled
        await expect(times).to_have_attribute("max", "5")
        await text.fill("hello")
        await times.fill("2")

        # Raw JSON mirrors the form, and edits there come back to the form.
        await page.get_by_role("button", name="Raw JSON").click()
        raw = page.locator("#raw-json")
        assert json.loads(await raw.input_value()) == {"text": "hello", "times": 2}
        await raw.fill('{"text": "hello", "times": 3}')
        await page.get_by_role("button", name="Raw JSON").click()
        await expect(times).to_have_value("3")
        await times.fill("2")

        await page.locator("#run").click()
        output = page.locator("#output")
        await expect(output).to_have_text('{\n  "echo": "hello hello"\n}')
        await expect(page.locator(".status")).to_contain_text("HTTP 200")
        await expect(page.locator(".status")).to_contain_text("2026-07-28")  # the newest era by default
        await detail.get_by_text("Input schema").click()  # folded again, so the shot shows the form and result
        await expect(input_schema).to_be_hidden()
        await output.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer.png"))

        # A missing required field is caught by the form: nothing is sent.
        await text.fill("")
        await page.get_by_role("tab", name="Protocol").click()
        sent = await page.locator("#protocol > li").count()
        await page.locator("#run").click()
        await expect(text).to_have_attribute("aria-invalid", "true")
        await expect(page.locator("#protocol > li")).to_have_count(sent)
        await expect(output).to_have_text('{\n  "echo": "hello hello"\n}')  # the last result stays
        # The server's own validation, for what the form lets through (raw JSON): an error result.
        await page.get_by_role("button", name="Raw JSON").click()
        await page.locator("#raw-json").fill('{"times": 2}')
        await page.locator("#run").click()
        await page.get_by_role("tab", name="Result").click()
        await expect(output).to_contain_text("Input validation failed")
        await expect(output).to_contain_text("- text: Field required")
        await expect(output).to_have_class(re.compile(r"\berror\b"))
        await expect(page.locator(".status")).to_have_class(re.compile(r"\bbad\b"))
        await page.get_by_role("button", name="Raw JSON").click()

        # A link to a tool opens it; nested objects get their own fieldset.
        await page.goto(ex.url + "#tool=demo.path")
        await expect(page.locator("#detail h2")).to_have_text("demo.path")
        await expect(page.locator('#tool-list a[aria-current="true"]')).to_have_attribute("data-name", "demo.path")
        start = page.locator("fieldset", has_text="start")
        await start.get_by_label("x", exact=True).fill("4")
        await start.get_by_label("y", exact=True).fill("5")
        await page.get_by_role("button", name="Raw JSON").click()  # the list of points, as JSON
        raw_args = json.loads(await page.locator("#raw-json").input_value())
        assert raw_args["start"] == {"x": 4, "y": 5}
        await page.locator("#raw-json").fill(json.dumps({**raw_args, "stops": [{"x": 1, "y": 2}]}))
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "echo": "2"\n}')

        assert ex.unexpected_problems() == []
        assert ex.dialogs == []


async def test_execution_disabled_by_default(browser: Browser) -> None:
    async with explorer(browser) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.echo")
        await expect(page.locator("#detail h2")).to_have_text("demo.echo")
        await expect(page.locator("#exec-badge")).to_have_text("execution disabled")
        await expect(page.locator("#run")).to_be_hidden()  # the panel says why instead
        await expect(page.locator("#exec-note")).to_have_text("Execution is disabled on this server")
        await expect(page.locator("#token")).to_have_count(0)

        # The server refuses the call itself, on the MCP endpoint the page uses.
        answer = await page.evaluate(
            """async () => {
                const response = await fetch("mcp", { method: "POST", headers: {
                    "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
                    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
                        params: { name: "demo.echo", arguments: { text: "x" } } }) });
                return { status: response.status, body: await response.json() };
            }"""
        )
        assert answer["status"] == 403
        assert answer["body"]["error"]["data"]["setting"] == "allow_execute"
        assert ex.unexpected_problems(r"status of 403 .*/explorer/mcp") == []


class XssIn(BaseModel):
    note: str = Field(default="", description=PAYLOAD)


class XssOut(BaseModel):
    echo: str


class Xss:
    description = PAYLOAD
    documentation = PAYLOAD
    input_schema = XssIn
    output_schema = XssOut
    tags = ["<b>bold</b>"]

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": PAYLOAD}


async def test_untrusted_text_is_shown_literally(browser: Browser) -> None:
    registry = Registry()
    registry.register("demo.xss", Xss())
    registry.register("demo.echo", Echo())
    async with explorer(browser, make_executor(registry), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url)
        item = page.locator('#tool-list a[data-name="demo.xss"]')
        await expect(item.locator(".tool-desc")).to_have_text(PAYLOAD)
        await ex.select("demo.xss")
        await expect(page.locator("#detail .desc")).to_have_text(PAYLOAD)
        await expect(page.locator("#detail .doc.markdown")).to_have_text(PAYLOAD)
        await expect(page.locator("#detail .chip.tag")).to_have_text("#<b>bold</b>")
        await expect(page.locator("#detail .hint")).to_have_text(PAYLOAD)
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text(json.dumps({"echo": PAYLOAD}, indent=2))

        assert await page.locator("img").count() == 0
        assert await page.locator("b").count() == 0
        assert await page.locator("script").count() == 1
        await page.wait_for_timeout(300)  # an injected handler would have fired by now
        assert ex.dialogs == []
        assert ex.problems == []


async def test_token_is_asked_for_and_sent(browser: Browser) -> None:
    token = "t" * 24
    async with explorer(browser, allow_execute=True, execute_token=token) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.echo")
        await expect(page.locator("#token-badge")).to_be_visible()
        await page.get_by_label("text", exact=True).fill("hi")
        await page.locator("#run").click()
        await expect(page.locator("#output .failure")).to_have_text("A valid explorer token is required")
        await expect(page.locator(".status")).to_contain_text("HTTP 401")
        await expect(page.locator("#token")).to_be_focused()
        await page.locator("#token").fill(token)
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "echo": "hi"\n}')
        await page.get_by_role("tab", name="Protocol").click()  # the token went as a header, never in a message
        assert token not in (await page.locator("#protocol").text_content() or "")
        assert ex.unexpected_problems(r"status of 401 .*/explorer/mcp") == []


class Color(StrEnum):
    red = "red"
    blue = "blue"


class Inner(BaseModel):
    label: str
    weight: float | None = None


class RichIn(BaseModel):
    color: Color = Color.red
    mode: Literal["fast", "slow"]
    flag: bool = False
    maybe: bool | None = None
    count: int | None = Field(default=None, ge=0)
    when: datetime | None = None
    names: list[str] = ["a", "b"]
    nums: list[int] = []
    inner: Inner | None = None
    body: str = Field(default="", max_length=1000)


class Rich:
    description = "Echoes its arguments"
    input_schema = RichIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(inputs)


async def test_form_widgets_follow_the_schema(browser: Browser) -> None:
    registry = Registry()
    registry.register("demo.rich", Rich())
    async with explorer(browser, make_executor(registry), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.rich")
        await expect(page.locator("#detail h2")).to_have_text("demo.rich")
        label = page.get_by_label
        await expect(label("color", exact=True)).to_have_js_property("tagName", "SELECT")
        await expect(label("mode", exact=True)).to_have_js_property("tagName", "SELECT")
        await expect(label("flag", exact=True)).to_have_attribute("type", "checkbox")
        await expect(label("maybe", exact=True)).to_have_js_property("tagName", "SELECT")  # unset / true / false
        await expect(label("when", exact=True)).to_have_attribute("placeholder", re.compile(r"\d{4}-\d\d-\d\dT"))
        await expect(label("body", exact=True)).to_have_js_property("tagName", "TEXTAREA")
        await expect(page.get_by_label("names item")).to_have_count(2)  # the default, one row per item
        inner = page.locator("fieldset", has_text="inner").get_by_label("label", exact=True)
        await expect(inner).to_be_hidden()  # an optional object is left out until included

        # Untouched, the form sends the defaults and omits optional empties.
        toggle = page.get_by_role("button", name="Raw JSON")
        await toggle.click()
        raw = page.locator("#raw-json")
        assert json.loads(await raw.input_value()) == {"color": "red", "flag": False, "names": ["a", "b"], "nums": []}
        await toggle.click()

        await label("mode", exact=True).select_option(label="slow")
        await label("maybe", exact=True).select_option(label="true")
        await label("count", exact=True).fill("3")
        await page.get_by_label("names item").first.fill("x")
        await page.get_by_role("button", name="Remove item").nth(1).click()
        await page.get_by_role("button", name="+ Add item").nth(1).click()
        await expect(page.get_by_label("nums item")).to_be_focused()
        await page.keyboard.type("7")
        await label("include inner", exact=True).check()
        await inner.fill("L")
        expected = {
            "color": "red",
            "mode": "slow",
            "flag": False,
            "maybe": True,
            "count": 3,
            "names": ["x"],
            "nums": [7],
            "inner": {"label": "L"},
        }
        await toggle.click()
        assert json.loads(await raw.input_value()) == expected
        await raw.fill(json.dumps({**expected, "names": ["p", "q"], "when": "2026-01-02T03:04:05"}))
        await toggle.click()
        await expect(page.get_by_label("names item")).to_have_count(2)
        await expect(label("when", exact=True)).to_have_value("2026-01-02T03:04:05")
        await page.locator("#run").click()
        await expect(page.locator(".status")).to_contain_text("HTTP 200")
        result = json.loads(await page.locator("#output").text_content() or "")
        assert result == {**expected, "names": ["p", "q"], "when": "2026-01-02T03:04:05"}
        assert ex.problems == []
