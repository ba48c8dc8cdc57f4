"""Result budgets (issue 32, item 4): a result over ``max_result_bytes`` is cut where the model sees it.

Through the SDK's own client in memory, in both protocol eras: the cut result is within the
budget plus the announcement, its ``structuredContent`` still validates against the tool's output
schema (the SDK client checks it), the announcement says how much was cut out of how much and how
to get the rest; a module's own budget may lower the server's, never raise it; in the 2026-07-28
era ``minimal_text_with_structured`` sends a one-line text; ``/metrics`` counts each cut.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.budget import TRUNCATED_META_KEY, fit
from apcore_mcp.settings import SettingError, Settings

from tests._support.budget_modules import announcement, budget_registry, sent_bytes
from tests._support.hostile import metric, metrics_text, serving
from tests._support.sessions import Inbox, open_session

ERAS = ["memory", "memory-modern"]


@contextlib.asynccontextmanager
async def client_of(era: str, **settings: Any) -> AsyncIterator[Any]:
    bridge = Bridge.build(budget_registry(), Settings(**settings))
    async with BridgeService(bridge), open_session(era, bridge, Inbox()) as client:
        yield client


@pytest.mark.parametrize("era", ERAS)
async def test_a_result_over_the_budget_is_cut_and_announced(era: str) -> None:
    async with client_of(era, max_result_bytes=1024) as client:
        whole = 500 * len('"item-00000",') * 2  # the items, in structuredContent and its JSON text
        result = await client.call_tool("data.list", {"count": 500})  # the SDK client validates the schema
        assert result.is_error is False
        assert sent_bytes(result) <= 1024
        assert isinstance(result.structured_content, dict)
        items = result.structured_content["items"]
        assert 0 < len(items) < 500 and items == [f"item-{i:05d}" for i in range(len(items))]
        assert result.structured_content["total"] == 500  # every key stays
        assert json.loads(result.content[0].text) == result.structured_content  # the text is the cut value
        said = announcement(result)
        figures = said.meta[TRUNCATED_META_KEY]  # type: ignore[index]
        assert figures["budgetBytes"] == 1024 and figures["sentBytes"] == sent_bytes(result)
        assert figures["originalBytes"] > whole
        assert f"{figures['sentBytes']} of {figures['originalBytes']} bytes sent" in said.text
        assert "structuredContent was shortened" in said.text and "asking for less" in said.text
        assert result.content[-1] is said  # links are off: nothing follows it

        small = await client.call_tool("data.list", {"count": 3})
        assert small.structured_content == {"items": ["item-00000", "item-00001", "item-00002"], "total": 3}
        assert len(small.content) == 1 and not small.content[0].meta


@pytest.mark.parametrize("era", ERAS)
async def test_a_module_may_lower_the_budget_but_not_raise_it(era: str) -> None:
    async with client_of(era) as client:  # no server budget: the module's own applies
        tight = await client.call_tool("data.tight", {"count": 200})
        assert sent_bytes(tight) <= 600 and announcement(tight).meta[TRUNCATED_META_KEY]["budgetBytes"] == 600  # type: ignore[index]
        untouched = await client.call_tool("data.list", {"count": 200})
        assert untouched.structured_content is not None and len(untouched.structured_content["items"]) == 200
    async with client_of(era, max_result_bytes=2048) as client:
        loose = await client.call_tool("data.loose", {"count": 500})
        assert sent_bytes(loose) <= 2048 and announcement(loose).meta[TRUNCATED_META_KEY]["budgetBytes"] == 2048  # type: ignore[index]
        tight = await client.call_tool("data.tight", {"count": 500})
        assert announcement(tight).meta[TRUNCATED_META_KEY]["budgetBytes"] == 600  # type: ignore[index]


@pytest.mark.parametrize("era", ERAS)
async def test_minimal_text_in_the_2026_era_only(era: str) -> None:
    async with client_of(era, minimal_text_with_structured=True) as client:
        result = await client.call_tool("data.list", {"count": 50})
        assert result.structured_content is not None and len(result.structured_content["items"]) == 50
        text = result.content[0].text
        if era == "memory-modern":
            assert text.startswith("Result in structuredContent: 2 field(s)") and "item-" not in text
        else:  # handshake-era hosts read the text: it stays the JSON
            assert json.loads(text) == result.structured_content


async def test_minimal_text_leaves_the_budget_to_the_structured_content() -> None:
    async with client_of("memory-modern", max_result_bytes=1024, minimal_text_with_structured=True) as client:
        minimal = await client.call_tool("data.list", {"count": 500})
    async with client_of("memory-modern", max_result_bytes=1024) as client:
        full = await client.call_tool("data.list", {"count": 500})
    assert sent_bytes(minimal) <= 1024 and sent_bytes(full) <= 1024
    assert minimal.structured_content is not None and full.structured_content is not None
    assert len(minimal.structured_content["items"]) > 1.5 * len(full.structured_content["items"])


def test_content_blocks_are_kept_in_order_and_the_first_that_does_not_fit_ends_them() -> None:
    image = {"type": "image", "data": "A" * 400, "mimeType": "image/png"}
    wire = {
        "content": [{"type": "text", "text": "x" * 300}, image, {"type": "text", "text": "y" * 300}],
        "isError": False,
    }
    cut, what = fit(wire, 600)
    assert what is not None and what.structured == "none"
    assert cut["content"] == [{"type": "text", "text": "x" * 300}]  # the image does not fit: dropped, and after it all
    assert fit(wire, 10_000) == (wire, None)


def test_the_setting_is_checked() -> None:
    with pytest.raises(SettingError, match="max_result_bytes must be 0 \\(off\\) or an integer >= 256"):
        Settings(max_result_bytes=100)
    assert Settings(max_result_bytes=0).max_result_bytes == 0


async def test_metrics_count_cut_results_by_tool() -> None:
    async with (
        serving(budget_registry(), max_result_bytes=1024) as (url, _bridge),
        open_session("http", url, Inbox()) as client,
    ):
        await client.call_tool("data.list", {"count": 500})
        await client.call_tool("data.list", {"count": 2})
        await client.call_tool("data.prose", {"count": 5000})
        text = await metrics_text(url)
    assert metric(text, "apcore_mcp_tool_results_truncated_total", tool="data.list") == 1
    assert metric(text, "apcore_mcp_tool_results_truncated_total", tool="data.prose") == 1


async def test_a_large_result_is_cut_like_a_small_one() -> None:
    # 100,000 items (about 2.6 MB with the JSON text) take the worker-thread path.
    async with client_of("memory-modern", max_result_bytes=4096) as client:
        result = await client.call_tool("data.list", {"count": 100_000})
    assert sent_bytes(result) <= 4096 and result.structured_content is not None
    assert result.structured_content["total"] == 100_000 and 0 < len(result.structured_content["items"]) < 200
