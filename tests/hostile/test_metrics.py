"""/metrics: an HTTP request-duration histogram with bounded labels, and refusals counted by every reason."""

from __future__ import annotations

import httpx

from tests._support.hostile import (
    ACCEPT,
    INIT,
    metric,
    metrics_text,
    open_session,
    serving,
    session_headers,
    tool_call,
)

HISTOGRAM = "apcore_mcp_http_request_duration_seconds_count"
REJECTED = "apcore_mcp_rejected_requests_total"


async def test_requests_are_timed_by_route_template_method_and_status_class() -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient() as http:
        for _ in range(3):
            await http.get(f"{url}/health")
        await http.get(f"{url}/explorer/tools/hostile.echo")
        await http.get(f"{url}/explorer/tools/no.such.tool")
        await http.post(f"{url}/mcp", json=INIT, headers=ACCEPT)
        await http.get(f"{url}/no/such/path")
        text = await metrics_text(url)
    tool = "/explorer/tools/{name}"
    assert metric(text, HISTOGRAM, route="/health", method="GET", status="2xx") == 3
    assert metric(text, HISTOGRAM, route=tool, method="GET", status="2xx") == 1
    assert metric(text, HISTOGRAM, route=tool, method="GET", status="4xx") == 1  # not one series per tool
    assert metric(text, HISTOGRAM, route="/mcp", method="POST", status="2xx") == 1
    assert metric(text, HISTOGRAM, route="_unmatched", method="GET", status="4xx") == 1


async def test_refusals_are_counted_by_reason() -> None:
    settings = {"explorer": True, "allow_execute": True, "max_body_bytes": 2048, "rate_limit": 1, "rate_burst": 1}
    async with serving(**settings) as (url, _), httpx.AsyncClient() as http:
        session = session_headers(await open_session(http, url))
        await http.get(f"{url}/health", headers={"Host": "evil.example"})
        await http.get(f"{url}/health", headers={"Origin": "http://evil.example"})
        await http.post(f"{url}/mcp", content=b"{not json", headers=session)  # 400
        await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, headers=session)
        await http.post(f"{url}/mcp", content=b"x" * 4096, headers=session)  # 413
        await http.post(f"{url}/mcp", content=b"{}", headers={**session, "Content-Type": "text/plain"})  # 400
        for request_id in (1, 2):  # the second is over the rate limit
            await http.post(f"{url}/mcp", json=tool_call(request_id, "hostile.echo", {}), headers=session)
        text = await metrics_text(url)
    expected = {"host": 1, "origin": 1, "bad_request": 3, "too_large": 1, "rate_limited": 1}
    assert {reason: metric(text, REJECTED, reason=reason) for reason in expected} == expected
