"""With authentication on, per-caller limits count principals: two callers behind one address are two callers."""

from __future__ import annotations

import httpx

from tests._support.auth import api_key_entry
from tests._support.hostile import ACCEPT, INIT, serving, session_headers, tool_call

ALICE, BOB = "alice-key-" + "a" * 30, "bob-key-" + "b" * 30
KEYS = {"auth": "api-key", "auth_api_keys": (api_key_entry(ALICE, "alice"), api_key_entry(BOB, "bob"))}


def as_caller(key: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {key}"}


async def test_the_session_cap_counts_principals_not_addresses() -> None:
    async with serving(max_sessions_per_caller=2, **KEYS) as (url, _), httpx.AsyncClient() as http:
        opened = [await http.post(f"{url}/mcp", json=INIT, headers=as_caller(ALICE)) for _ in range(3)]
        assert [response.status_code for response in opened] == [200, 200, 429]
        bob = await http.post(f"{url}/mcp", json=INIT, headers=as_caller(BOB))  # the same address
        assert bob.status_code == 200


async def test_the_rate_limit_counts_principals_not_addresses() -> None:
    async with serving(rate_limit=0.1, rate_burst=1, **KEYS) as (url, _), httpx.AsyncClient() as http:

        async def call(key: str) -> dict[str, object]:
            session = (await http.post(f"{url}/mcp", json=INIT, headers=as_caller(key))).headers["mcp-session-id"]
            headers = {**session_headers(session), "Authorization": f"Bearer {key}"}
            await http.post(
                f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            answers = []
            for request_id in (1, 2):
                response = await http.post(
                    f"{url}/mcp", json=tool_call(request_id, "hostile.echo", {}), headers=headers
                )
                answers.append(response.text)
            return {"first": "-32010" not in answers[0], "second": "-32010" in answers[1]}

        assert await call(ALICE) == {"first": True, "second": True}
        assert await call(BOB) == {"first": True, "second": True}  # alice's bucket is not bob's
