"""The explorer's order form in a real Chromium: filling it as a person would, and what the module
must then receive (``tests/http/explorer/test_explorer_*forms*_browser.py``)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect

from tests._support.form_modules import RECEIVED

ROOT = Path(__file__).resolve().parents[2]


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
