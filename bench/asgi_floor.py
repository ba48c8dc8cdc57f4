"""The floor: what Python's ASGI stack alone costs for one 2026-07-28 ``tools/call``.

A plain ASGI app (no MCP SDK, no Starlette) that reads the POST body, parses the JSON-RPC request
and answers the result an MCP server would give for ``bench.echo``: the same JSON shape, built with
``json``. Nothing is validated beyond what producing that answer needs, so no MCP server can cost
less on the same uvicorn stack.

    python -m bench.asgi_floor --stack h11 --transport streamable-http --host 127.0.0.1 --port P
    python -m bench.asgi_floor --stack httptools   # uvicorn with httptools and uvloop
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "asgi-floor", "version": "0"}}
JSON_HEADERS = [(b"content-type", b"application/json")]
STACKS = {"h11": ("h11", "asyncio"), "httptools": ("httptools", "uvloop")}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC response to a ``tools/call`` that echoes its arguments."""
    arguments = request.get("params", {}).get("arguments") or {}
    result = {
        "content": [{"type": "text", "text": json.dumps(arguments, separators=(",", ":"))}],
        "isError": False,
        "resultType": "complete",
        "structuredContent": arguments,
        "_meta": SERVER_INFO,
    }
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        status, payload = 200, answer(json.loads(body))
    except (ValueError, AttributeError):
        status, payload = 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    data = json.dumps(payload, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status, "headers": JSON_HEADERS})
    await send({"type": "http.response.body", "body": data})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stack", choices=sorted(STACKS), default="h11")
    parser.add_argument("--transport", choices=["streamable-http"], default="streamable-http")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    http, loop = STACKS[args.stack]
    uvicorn.run(app, host=args.host, port=args.port, http=http, loop=loop, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
