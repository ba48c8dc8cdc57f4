"""A request without ``MCP-Protocol-Version`` (and without a session) is told the header is missing.

The SDK took any such request for a handshake-era one and answered "Missing session ID", so a
2026-07-28 client that forgot the header was sent looking for sessions its revision does not have.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests._support.hostile import ACCEPT, INIT, modern_headers, open_session, serving, session_headers, tool_call

HEADERLESS = {**ACCEPT, "Mcp-Method": "tools/call", "Mcp-Name": "hostile.echo"}
"""A 2026-07-28 client's headers but the version."""


def _says_header_missing(response: httpx.Response, code: int, request_id: int) -> None:
    assert response.status_code == 400, response.text
    body: dict[str, Any] = response.json()
    message = body["error"]["message"]
    assert message.startswith("Missing MCP-Protocol-Version header"), message  # was "Bad Request: Missing session ID"
    assert "initialize" in message
    assert (body["id"], body["error"]["code"]) == (request_id, code)


async def test_a_2026_body_without_the_version_header_is_told_it_is_missing() -> None:
    async with serving() as (url, _), httpx.AsyncClient() as http:
        modern_body = await http.post(
            f"{url}/mcp", json=tool_call(7, "hostile.echo", {}, modern=True), headers=HEADERLESS
        )
        bare_body = await http.post(f"{url}/mcp", json=tool_call(8, "hostile.echo", {}), headers=ACCEPT)
        # What must not change: a handshake-era client's initialize, then its session's calls,
        # and a 2026-07-28 call with its header.
        session = await open_session(http, url)
        handshake = await http.post(
            f"{url}/mcp", json=tool_call(9, "hostile.echo", {}), headers=session_headers(session)
        )
        modern = await http.post(
            f"{url}/mcp",
            json=tool_call(10, "hostile.echo", {}, modern=True),
            headers=modern_headers("tools/call", "hostile.echo"),
        )
    _says_header_missing(modern_body, -32020, 7)  # the SDK's code for a version header at odds with the body
    _says_header_missing(bare_body, -32600, 8)
    assert handshake.status_code == 200, handshake.text
    assert modern.status_code == 200, modern.text


async def test_stateless_still_serves_a_handshake_request_without_headers() -> None:
    async with serving(stateless=True) as (url, _), httpx.AsyncClient() as http:
        bare_body = await http.post(f"{url}/mcp", json=tool_call(1, "hostile.echo", {}), headers=ACCEPT)
        modern_body = await http.post(
            f"{url}/mcp", json=tool_call(2, "hostile.echo", {}, modern=True), headers=HEADERLESS
        )
        init = await http.post(f"{url}/mcp", json=INIT, headers=ACCEPT)
    assert bare_body.status_code == 200, bare_body.text  # stateless: no session to ask for
    assert init.status_code == 200, init.text
    _says_header_missing(modern_body, -32020, 2)
