"""What the explorer keeps, shows and reports, in a real headless Chromium against a real server.

A secret field (``writeOnly``, ``format: password``) is sent with the call but kept nowhere the page
stores or shares arguments, at any depth: nested objects, arrays of objects, ``$ref``'d definitions
and ``anyOf`` / ``oneOf`` / ``allOf`` branches. The Server view shows no stray ``null``; a module's
documentation is rendered as Markdown without ever becoming HTML; a handshake-era call that the page
answered during (elicitation) reports its own HTTP status, not the 202 that acknowledged the answer.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from apcore import Registry
from playwright.async_api import Browser, Page, expect
from pydantic import BaseModel

from tests._support.browser import choose_era, explorer
from tests._support.form_modules import RECEIVED, form_registry
from tests._support.interactive import INTERACTIVE_MODULES
from tests._support.modules import make_executor

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium

SECRETS = ["pw-creds-1", "key-item-2", "pw-backup-3", "pw-basic-4", "pin-extra-5"]
VAULT_ARGS: dict[str, Any] = {
    "name": "vault-1",
    "creds": {"user": "ada", "password": SECRETS[0]},  # a $ref'd object
    "keys": [{"label": "ci", "key": SECRETS[1]}],  # array items, format password only
    "backup": {"user": "bob", "password": SECRETS[2]},  # anyOf [$ref, null]
    "auth": {"kind": "basic", "user": "carol", "password": SECRETS[3]},  # oneOf of two $refs
    "extra": {"pin": SECRETS[4], "note": "kept"},  # allOf names pin writeOnly
}
VAULT_KEPT: dict[str, Any] = {
    "name": "vault-1",
    "creds": {"user": "ada"},
    "keys": [{"label": "ci"}],
    "backup": {"user": "bob"},
    "auth": {"kind": "basic", "user": "carol"},
    "extra": {"note": "kept"},
}


def link_arguments(url: str) -> Any:
    """The arguments the page's share link (``#tool=…&args=…``) carries."""
    fragment = parse_qs(urlsplit(url).fragment)
    return json.loads(fragment["args"][0]) if "args" in fragment else None


async def stored(page: Page) -> dict[str, Any]:
    """Everything the page keeps in localStorage, each value parsed."""
    raw: dict[str, str] = await page.evaluate("Object.assign({}, localStorage)")
    return {key: json.loads(value) for key, value in raw.items()}


async def test_secret_fields_are_sent_but_kept_nowhere_at_any_depth(browser: Browser) -> None:
    async with explorer(browser, make_executor(form_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=forms.vault")
        await expect(page.locator("#detail h2")).to_have_text("forms.vault")
        raw_toggle = page.get_by_role("button", name="Raw JSON")
        await raw_toggle.click()
        await page.locator("#raw-json").fill(json.dumps(VAULT_ARGS))
        await raw_toggle.click()  # back to the form: the call is collected from the form's fields
        await expect(page.get_by_label("user", exact=True).first).to_have_value("ada")
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_contain_text("vault-1")
        assert RECEIVED[-1] == ("forms.vault", VAULT_ARGS)  # the run itself sends every secret

        assert link_arguments(page.url) == VAULT_KEPT
        await page.reload()  # leaving the page flushes any save still waiting
        await expect(page.locator("#detail h2")).to_have_text("forms.vault")
        kept = await stored(page)
        assert kept["apcore-mcp-explorer.arguments"]["forms.vault"]["args"] == VAULT_KEPT
        assert [call["args"] for call in kept["apcore-mcp-explorer.history"]] == [VAULT_KEPT]
        everything = json.dumps(kept) + unquote(page.url)
        assert [secret for secret in SECRETS if secret in everything] == []
        # What was kept fills the form again; the secret fields are empty.
        await expect(page.get_by_label("user", exact=True).first).to_have_value("ada")
        await expect(page.get_by_label("password", exact=True).first).to_have_value("")
        assert ex.unexpected_problems() == []


DOCUMENTATION = """# Usage

Call it with **care** and *patience*; `inline <b>code</b>` stays code.

- one
- two [home](https://example.com/home) and [bad](javascript:alert(1))

```
fenced <b>code</b>
```

<script>window.injected = 1</script><img src=x onerror="window.injected = 2">
"""


class DocumentedIn(BaseModel):
    text: str = ""


class Documented:
    description = "Has Markdown documentation"
    documentation = DOCUMENTATION
    input_schema = DocumentedIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"text": inputs.get("text", "")}


def fixes_registry() -> Registry:
    registry = Registry()
    registry.register("demo.documented", Documented())
    registry.register("demo.ask", INTERACTIVE_MODULES["demo.ask"]())
    return registry


async def test_documentation_is_markdown_and_its_html_stays_text(browser: Browser) -> None:
    async with explorer(browser, make_executor(fixes_registry())) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.documented")
        doc = page.locator("#detail .doc.markdown")
        await expect(doc.locator("h3")).to_have_text("Usage")  # "#" under the tool's own h2
        await expect(doc.locator("strong")).to_have_text("care")
        await expect(doc.locator("em")).to_have_text("patience")
        await expect(doc.locator("p code")).to_have_text("inline <b>code</b>")
        await expect(doc.locator("li")).to_have_count(2)
        await expect(doc.locator("a")).to_have_count(1)  # http(s) only: the javascript: link is text
        await expect(doc.locator("a")).to_have_attribute("href", "https://example.com/home")
        await expect(doc.locator("li").nth(1)).to_contain_text("[bad](javascript:alert(1))")
        await expect(doc.locator("pre.code")).to_have_text("fenced <b>code</b>")
        await expect(doc.locator("p").last).to_have_text(
            '<script>window.injected = 1</script><img src=x onerror="window.injected = 2">'
        )
        assert await doc.locator("script, img, b").count() == 0
        assert await page.evaluate("window.injected === undefined")
        assert ex.unexpected_problems() == []


async def test_the_server_view_shows_no_stray_null(browser: Browser) -> None:
    # No instructions and no upstream servers: the parts that are missing are left out, not printed.
    async with explorer(browser, make_executor(fixes_registry())) as ex:
        page = ex.page
        await page.goto(ex.url)
        await page.locator("#view-server").click()
        await expect(page.locator("#ready-status")).to_have_text("Readiness: ready")
        texts: list[str] = await page.evaluate(
            """() => { const walker = document.createTreeWalker(document.getElementById("detail"), NodeFilter.SHOW_TEXT);
                       const out = []; while (walker.nextNode()) out.push(walker.currentNode.data.trim()); return out; }"""
        )
        assert "Capabilities" in texts
        assert "null" not in texts
        assert ex.unexpected_problems() == []


async def test_a_handshake_era_call_answered_during_reports_its_own_status(browser: Browser) -> None:
    async with explorer(browser, make_executor(fixes_registry()), allow_execute=True) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=demo.ask")
        await expect(page.locator("#detail h2")).to_have_text("demo.ask")
        await choose_era(page, "2025-11-25")
        await page.locator("#run").click()
        dialog = page.locator("#elicit-dialog")
        await dialog.locator("input").first.fill("Ada")
        await dialog.locator("#elicit-accept").click()
        await expect(page.locator("#output")).to_contain_text('"answer": "Ada"')
        # The answer's POST was acknowledged with 202; the call's own POST was answered 200 with its result.
        await expect(page.locator(".status")).to_contain_text("HTTP 200 · ")
        await expect(page.locator(".status")).to_have_class("status good")
        acks = page.locator('#protocol > li[data-kind="http"]', has_text="HTTP 202")
        await expect(acks).to_have_count(2)  # notifications/initialized and the elicitation answer
        assert ex.unexpected_problems() == []
