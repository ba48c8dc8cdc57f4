"""The explorer calls tools over MCP (issue 19), in a real headless Chromium against a real server.

The page speaks either protocol era (its header selector): every test that concerns the wire
runs in both. What a user sees is checked (the result, the Protocol view with each JSON-RPC
message, the server's questions in a dialog, the progress bar, Cancel, the disabled panel), and
what the server did is checked through the modules' marker files. Any console error, page error
or CSP violation fails a test (4xx answers the test provokes are the only allowed notices).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from apcore import Registry
from playwright.async_api import Browser, Page, expect

from tests._support.browser import ARTIFACTS, ERAS, choose_era, explorer, protocol_log
from tests._support.interactive_modules import interactive_registry
from tests._support.modules import Routed, make_executor

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="session")]  # the session's Chromium
MCP_META = "io.modelcontextprotocol/"
MODERN = "2026-07-28"


def shot(name: str, era: str) -> str:
    ARTIFACTS.mkdir(exist_ok=True)
    return str(ARTIFACTS / f"{name}-{era[:4]}.png")


async def open_tool(page: Page, url: str, era: str, name: str) -> None:
    await page.goto(url + "#tool=" + name)
    await choose_era(page, era)
    await expect(page.locator("#detail h2")).to_have_text(name)


async def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_shows_its_result_and_every_protocol_message(browser: Browser, era: str, tmp_path: Path) -> None:
    marker = tmp_path / "steps"
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        posts: list[dict[str, str]] = []
        page.on(
            "request",
            lambda r: (
                posts.append({**r.headers, "method": r.method, "body": r.post_data or ""})
                if r.url.endswith("/explorer/mcp")
                else None
            ),
        )
        await open_tool(page, ex.url, era, "ui.steps")
        await page.reload()  # the era is kept
        await expect(page.locator("#era")).to_have_value(era)
        await page.get_by_label("marker", exact=True).fill(str(marker))
        await page.get_by_label("steps", exact=True).fill("3")
        await page.locator("#run").click()
        output = page.locator("#output")
        await expect(output).to_have_text('{\n  "steps": 3\n}')
        await expect(page.locator(".status")).to_contain_text("HTTP 200 · ")
        await expect(page.locator(".status")).to_contain_text(era)
        assert marker.read_text() == "finished"
        if era == MODERN:  # the result's own _meta, shown beside it
            await page.locator("#result-meta summary").click()
            await expect(page.locator("#result-meta")).to_contain_text('"io.modelcontextprotocol/serverInfo"')
        await page.screenshot(path=shot("explorer-result", era))

        await page.get_by_role("tab", name="Protocol").click()
        await expect(page.locator("#protocol")).to_be_visible()
        await expect(output).to_be_hidden()
        log = await protocol_log(page)
        calls = [e for e in log if e["kind"] == "request" and e["what"] == "tools/call"]
        assert len(calls) == 1 and calls[0]["dir"] == "out"
        sent = calls[0]["message"]
        params = sent["params"]
        assert sent["jsonrpc"] == "2.0" and sent["method"] == "tools/call"
        assert params["name"] == "ui.steps"
        assert params["arguments"] == {"marker": str(marker), "steps": 3, "pause": 0}
        token = params["_meta"]["progressToken"]
        if era == MODERN:  # stateless: the version, capabilities and client info ride on every request
            assert params["_meta"][MCP_META + "protocolVersion"] == MODERN
            assert params["_meta"][MCP_META + "clientCapabilities"]["elicitation"] == {"form": {}}
            assert params["_meta"][MCP_META + "logLevel"] == "info"
            assert [e["what"] for e in log if e["kind"] == "request"] == ["server/discover", "tools/call"]
        else:
            requests = [e["message"] for e in log if e["kind"] == "request"]
            assert [m["method"] for m in requests] == ["initialize", "logging/setLevel", "tools/call"]
            assert requests[1]["params"] == {"level": "info"}
            assert any(e["what"] == "notifications/initialized" for e in log)
        progress = [e["message"]["params"] for e in log if e["what"] == "notifications/progress"]
        assert progress == [
            {"progressToken": token, "progress": step, "total": 3, "message": f"step {step} of 3"} for step in (1, 2, 3)
        ]
        logs = [e["message"]["params"] for e in log if e["what"] == "notifications/message"]
        assert logs == [{"level": "info", "logger": "ui.steps", "data": "finished 3 steps"}]
        responses = [e for e in log if e["kind"] == "response"]
        final = responses[-1]["message"]
        assert final["id"] == sent["id"] and final["result"]["structuredContent"] == {"steps": 3}
        assert any(e["kind"] == "http" and e["what"].startswith("HTTP 200") for e in log)
        # In order, with time offsets that never go back.
        offsets = [int(e["time"].strip("+ ms")) for e in log]
        assert offsets == sorted(offsets)
        assert log.index(calls[0]) < log.index(responses[-1])
        await page.locator('#protocol li[data-kind="notification"]').first.scroll_into_view_if_needed()
        await page.screenshot(path=shot("explorer-protocol", era))

        call_post = next(h for h in posts if json.loads(h["body"] or "{}").get("method") == "tools/call")
        assert call_post["accept"] == "application/json, text/event-stream"
        assert call_post["content-type"] == "application/json"
        if era == MODERN:
            assert "mcp-session-id" not in call_post
            assert (call_post["mcp-protocol-version"], call_post["mcp-name"]) == (MODERN, "ui.steps")
        else:
            assert call_post["mcp-protocol-version"] == era and call_post["mcp-session-id"]
            # Leaving the era ends the session: DELETE with its id.
            async with page.expect_request(lambda r: r.method == "DELETE" and r.url.endswith("/explorer/mcp")) as ended:
                await choose_era(page, MODERN)
            assert (await ended.value).headers["mcp-session-id"] == call_post["mcp-session-id"]
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_elicitation_is_answered_and_declined_in_a_dialog(browser: Browser, era: str) -> None:
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, era, "ui.ask")
        await page.locator("#run").click()
        dialog = page.get_by_role("dialog", name="The server asks")
        await expect(dialog).to_be_visible()
        await expect(page.locator("#elicit-message")).to_have_text("Who is asking?")
        await expect(dialog.get_by_label("name", exact=True)).to_be_focused()  # keyboard first
        await page.keyboard.type("Ada")
        await dialog.get_by_label("stars", exact=True).fill("2")
        await page.screenshot(path=shot("explorer-elicitation", era))
        await page.keyboard.press("Enter")  # submits the dialog's form: Accept
        await expect(dialog).to_have_count(0)
        await expect(page.locator("#output")).to_contain_text('"message": "Hello, Ada**"')
        log = await protocol_log(page)
        asked = "server-request" if era != MODERN else "input-request"
        questions = [e for e in log if e["kind"] == asked]
        assert len(questions) == 1 and questions[0]["message"]["method"] == "elicitation/create"
        assert questions[0]["message"]["params"]["message"] == "Who is asking?"
        answers = [e["message"] for e in log if e["dir"] == "out" and e["kind"] in ("response", "input-response")]
        answer = answers[0] if era == MODERN else answers[0]["result"]
        assert answer == {"action": "accept", "content": {"name": "Ada", "stars": 2}}

        await page.locator("#run").click()
        await expect(dialog).to_be_visible()
        await dialog.get_by_role("button", name="Decline").click()
        await expect(dialog).to_have_count(0)
        await expect(page.locator("#output")).to_contain_text('"message": "nobody answered"')
        # Escape on the dialog is a cancel: the module hears nobody answered, too.
        await page.locator("#run").click()
        await expect(dialog).to_be_visible()
        await page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)
        await expect(page.locator("#output")).to_contain_text('"answered": false')
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_approval_runs_the_tool_only_when_confirmed(browser: Browser, era: str, tmp_path: Path) -> None:
    marker = tmp_path / "published"
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, era, "ui.approve")
        await page.get_by_label("marker", exact=True).fill(str(marker))
        await page.locator("#run").click()
        dialog = page.get_by_role("dialog", name="Approve ui.approve?")
        await expect(dialog).to_be_visible()
        await expect(dialog.locator(".chip.approval")).to_have_text("needs approval")
        await expect(page.locator("#approval-description")).to_have_text(
            "Publishes the report (writes the marker): needs the user's approval"
        )
        assert json.loads(await page.locator("#approval-args").text_content() or "") == {"marker": str(marker)}
        await expect(dialog.get_by_role("button", name="Decline")).to_be_focused()  # the safe answer first
        await page.screenshot(path=shot("explorer-approval", era))
        await dialog.get_by_role("button", name="Decline").click()
        await expect(dialog).to_have_count(0)
        output = page.locator("#output")
        await expect(output).to_contain_text("requires approval: the user declined")
        await expect(output).to_have_class("result error")
        assert not marker.exists()

        await page.locator("#run").click()
        await dialog.get_by_role("button", name="Approve and run").click()
        await expect(output).to_have_text('{\n  "done": true\n}')
        assert marker.read_text() == "ran"
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_progress_moves_and_cancel_stops_the_module(browser: Browser, era: str, tmp_path: Path) -> None:
    marker = tmp_path / "long"
    cancelled = tmp_path / "long.cancelled"
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, era, "ui.steps")
        await page.get_by_label("marker", exact=True).fill(str(marker))
        await page.get_by_label("steps", exact=True).fill("100")
        await page.get_by_label("pause", exact=True).fill("0.1")
        await page.locator("#run").click()
        bar = page.locator("#call-progress")
        await expect(bar).to_be_visible()
        await expect(bar).to_have_attribute("max", "100")
        value = "() => document.getElementById('call-progress').value"
        await page.wait_for_function(f"() => ({value})() >= 3", timeout=5000)
        first = await page.evaluate(value)
        await page.wait_for_function(f"() => ({value})() >= {first + 3}", timeout=5000)
        later = await page.evaluate(value)
        await expect(page.locator("#progress-message")).to_have_text(re.compile(r"^step \d+ of 100$"))
        assert 3 <= first < later  # the bar moves
        await page.screenshot(path=shot("explorer-progress", era))
        await page.locator("#cancel").click()
        await expect(page.locator("#output")).to_have_text("The call was cancelled.")
        await expect(page.locator("#run")).to_be_enabled()
        await expect(bar).to_be_hidden()
        await eventually(cancelled.exists)  # the module was cancelled on the server
        assert not marker.exists()
        log = await protocol_log(page)
        if era == MODERN:
            assert any(e["kind"] == "note" and "closing the response stream" in e["what"] for e in log)
        else:
            notes = [e["message"] for e in log if e["what"] == "notifications/cancelled"]
            call = next(e["message"] for e in log if e["what"] == "tools/call")
            assert notes and notes[0]["params"]["requestId"] == call["id"]
        assert ex.unexpected_problems() == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_destructive_tool_is_confirmed_by_the_page(browser: Browser, era: str, tmp_path: Path) -> None:
    marker = tmp_path / "wiped"
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, era, "ui.wipe")
        await page.get_by_label("marker", exact=True).fill(str(marker))
        await page.locator("#run").click()
        dialog = page.locator("#confirm-dialog")
        await expect(dialog).to_contain_text("ui.wipe is destructive.")
        await page.locator("#confirm-cancel").click()
        await expect(dialog).to_have_count(0)
        await expect(page.locator("#output")).to_be_hidden()  # nothing was sent
        assert not marker.exists()

        await page.locator("#run").click()
        await page.locator("#confirm-run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "done": true\n}')
        assert marker.read_text() == "ran"
        assert ex.unexpected_problems() == []


async def test_execution_off_says_which_setting_enables_it(browser: Browser) -> None:
    async with explorer(browser, make_executor(interactive_registry())) as ex:
        page = ex.page
        await page.goto(ex.url + "#tool=ui.steps")
        await expect(page.locator("#detail h2")).to_have_text("ui.steps")
        panel = page.locator("#exec-disabled")
        await expect(panel).to_be_visible()
        await expect(page.locator("#exec-note")).to_have_text("Execution is disabled on this server")
        await expect(panel).to_contain_text("--allow-execute")
        await expect(panel).to_contain_text("APCORE_MCP_ALLOW_EXECUTE=true")
        await expect(page.locator("#exec-risk")).to_contain_text("run this server's tools from a browser")
        await expect(page.locator("#run")).to_be_hidden()
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "explorer-disabled.png"))
        # The server refuses a call itself, naming the setting (what the page's panel says).
        answer = await page.evaluate(
            """async () => {
                const response = await fetch("mcp", { method: "POST", headers: {
                    "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
                    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
                        params: { name: "ui.steps", arguments: { marker: "/nonexistent" } } }) });
                return { status: response.status, body: await response.json() };
            }"""
        )
        assert answer["status"] == 403
        assert answer["body"]["error"]["data"] == {
            "setting": "allow_execute",
            "flag": "--allow-execute",
            "env": "APCORE_MCP_ALLOW_EXECUTE",
        }
        assert ex.unexpected_problems(r"status of 403 .*/explorer/mcp") == []


async def test_arguments_the_schema_mirrors_travel_as_mcp_param_headers(browser: Browser) -> None:
    # 2026-07-28: a property with x-mcp-header is sent as Mcp-Param-<name> too (base64-wrapped when
    # not plain ASCII); the server refuses a call whose header is missing or differs.
    registry = Registry()
    registry.register("demo.routed", Routed())
    async with explorer(browser, make_executor(registry), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, MODERN, "demo.routed")
        await page.get_by_label("region", exact=True).fill("Zürich")
        await page.get_by_label("text", exact=True).fill("hi")
        async with page.expect_request(lambda r: '"tools/call"' in (r.post_data or "")) as sent:
            await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "region": "Zürich",\n  "text": "hi"\n}')
        headers = (await sent.value).headers
        assert headers["mcp-param-region"] == "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
        assert headers["mcp-name"] == "demo.routed" and headers["mcp-method"] == "tools/call"
        assert ex.unexpected_problems() == []


async def test_a_released_stream_is_resumed_from_its_last_event(browser: Browser) -> None:
    # Handshake era: a long call's stream closed by the server is resumed with Last-Event-ID (GET).
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True, sse_retry_ms=200) as ex:
        page = ex.page
        await open_tool(page, ex.url, "2025-11-25", "ui.long")
        async with page.expect_request(lambda r: r.method == "GET" and r.url.endswith("/explorer/mcp")) as resumed:
            await page.locator("#run").click()
        assert (await resumed.value).headers["last-event-id"]
        await expect(page.locator("#output")).to_contain_text('"released": true')
        await expect(page.locator("#output")).to_contain_text('"text": "' + "x" * 1000 + '"')
        log = await protocol_log(page)
        progress = [e["message"]["params"]["message"] for e in log if e["what"] == "notifications/progress"]
        assert progress == ["releasing the stream", "done"]  # the second one came on the resumed stream
        assert any(e["kind"] == "note" and "resuming after event" in e["what"] for e in log)
        assert ex.unexpected_problems() == []


async def test_a_session_gone_on_the_server_is_started_anew(browser: Browser, tmp_path: Path) -> None:
    async with explorer(browser, make_executor(interactive_registry()), allow_execute=True) as ex:
        page = ex.page
        await open_tool(page, ex.url, "2025-11-25", "ui.steps")
        await page.get_by_label("marker", exact=True).fill(str(tmp_path / "one"))
        async with page.expect_request(lambda r: '"tools/call"' in (r.post_data or "")) as first:
            await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "steps": 3\n}')
        session = (await first.value).headers["mcp-session-id"]
        # The session ends behind the page's back (as when the server restarts).
        ended = await page.evaluate(
            """async (id) => (await fetch("mcp", { method: "DELETE", headers: { "Mcp-Session-Id": id,
                "MCP-Protocol-Version": "2025-11-25" } })).status""",
            session,
        )
        assert ended == 200
        await page.get_by_label("marker", exact=True).fill(str(tmp_path / "two"))
        await page.locator("#run").click()
        await expect(page.locator("#output")).to_have_text('{\n  "steps": 3\n}')
        assert (tmp_path / "two").read_text() == "finished"
        log = await protocol_log(page)
        assert [e["what"] for e in log if e["kind"] == "request"] == [
            "tools/call",
            "initialize",
            "logging/setLevel",
            "tools/call",
        ]
        assert any(e["kind"] == "note" and "starting a new one" in e["what"] for e in log)
        assert ex.unexpected_problems(r"status of 404 .*/explorer/mcp") == []
