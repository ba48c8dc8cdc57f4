"""A client that fires N tool calls at once and waits, to be killed: ``python -m tests.hostile.caller URL ERA N [SESSION_ID]``.

ERA is ``handshake`` (POSTs in the given session) or ``modern`` (self-contained 2026-07-28 POSTs).
Each call has its own connection, as a real client's would after a kill: all of them close at once.
"""

import asyncio
import sys

import httpx

from tests._support.hostile import modern_headers, session_headers, tool_call


async def main(url: str, era: str, count: int, session_id: str | None) -> None:
    modern = era == "modern"
    headers = modern_headers("tools/call", "hostile.sleep") if modern else session_headers(str(session_id))
    limits = httpx.Limits(max_connections=count + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        calls = [
            http.post(
                f"{url}/mcp", json=tool_call(1000 + i, "hostile.sleep", {"seconds": 60}, modern=modern), headers=headers
            )
            for i in range(count)
        ]
        print("calling", flush=True)
        await asyncio.gather(*calls)


if __name__ == "__main__":
    url, era, count, *rest = sys.argv[1:]
    asyncio.run(main(url, era, int(count), rest[0] if rest else None))
