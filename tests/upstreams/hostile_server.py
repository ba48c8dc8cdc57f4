"""A misbehaving MCP server for the upstream bound tests: raw JSON-RPC, no SDK.

``python tests/upstreams/hostile_server.py [--transport stdio|http] [--port N]`` answers the
handshake-era ``initialize``, ``tools/list`` and ``tools/call`` over stdio (one JSON line per
message) or Streamable HTTP (JSON bodies on ``POST /mcp``, on 127.0.0.1). Tools:

- ``echo {text}``: a proper answer;
- ``big {mib}``: an answer of ``mib`` MiB on one line (a JSON body over HTTP);
- ``big_sse {mib}``: the same, over HTTP as one server-sent event;
- ``junk {mb}``: ``mb`` MB of lines that are not JSON on stdout, a marker on stderr, then a proper answer;
- ``wrong_id``: a proper answer under an id that was never sent;
- ``malformed``: a reply under the right id whose ``result`` is not an object;
- ``bad_result``: a valid JSON-RPC reply whose result is not a ``CallToolResult``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

STDERR_MARKER = "hostile-server-stderr-marker"
MIB = 1024 * 1024
TOOLS = [
    {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}}
    for name, description, properties in [
        ("echo", "Echo the text back", {"text": {"type": "string"}}),
        ("big", "Answer with one huge line", {"mib": {"type": "number"}}),
        ("big_sse", "Answer with one huge server-sent event", {"mib": {"type": "number"}}),
        ("junk", "Write junk lines, then answer", {"mb": {"type": "number"}}),
        ("wrong_id", "Answer under an id never sent", {}),
        ("malformed", "Answer with a malformed reply", {}),
        ("bad_result", "Answer with a result of the wrong shape", {}),
    ]
]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def text_reply(request_id: Any, text: str) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def big_reply(request_id: Any, size: int) -> Iterator[bytes]:
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": ""}]}})
    prefix, suffix = head.split('""', 1)
    yield (prefix + '"').encode()
    for start in range(0, size, MIB):
        yield b"x" * min(MIB, size - start)
    yield ('"' + suffix + "\n").encode()


def junk(request_id: Any, size: int) -> Iterator[bytes]:
    junk_line = b"this is not json, just noise from a chatty server " * 20 + b"\n"
    for _ in range(size // len(junk_line)):
        yield junk_line
    print(STDERR_MARKER, file=sys.stderr, flush=True)
    yield text_reply(request_id, "after the junk")


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> Iterator[bytes]:
    if name == "echo":
        yield text_reply(request_id, str(arguments.get("text", "")))
    elif name in ("big", "big_sse"):
        yield from big_reply(request_id, int(float(arguments.get("mib", 70)) * MIB))
    elif name == "junk":
        yield from junk(request_id, int(float(arguments.get("mb", 20)) * 1_000_000))
    elif name == "wrong_id":
        yield text_reply(987_654_321, "under the wrong id")
    elif name == "malformed":
        yield line({"jsonrpc": "2.0", "id": request_id, "result": "not an object"})
    elif name == "bad_result":
        yield line({"jsonrpc": "2.0", "id": request_id, "result": {"content": 5}})
    else:
        yield line({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def answer(message: dict[str, Any]) -> Iterator[bytes]:
    """The bytes answering ``message`` (nothing for a notification)."""
    request_id, method, params = message.get("id"), message.get("method"), message.get("params") or {}
    if request_id is None:
        return
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
        yield line({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif method == "ping":
        yield line({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "tools/list":
        yield line({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        yield from call(request_id, params.get("name", ""), params.get("arguments") or {})
    else:
        yield line({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


def serve_stdio() -> None:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        try:
            for chunk in answer(json.loads(raw)):
                out.write(chunk)
            out.flush()
        except BrokenPipeError:
            return


def serve_http(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def mcp(request: Request) -> Response:
        message = json.loads(await request.body())
        body = b"".join(answer(message))
        if not body:
            return Response(status_code=202)
        if (message.get("params") or {}).get("name") == "big_sse":
            return Response(b"event: message\ndata: " + body.rstrip(b"\n") + b"\n\n", media_type="text/event-stream")
        return Response(body, media_type="application/json")

    async def health(_request: Request) -> Response:
        return Response("ok")

    routes = [Route("/mcp", mcp, methods=["POST"]), Route("/health", health)]
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    if options.transport == "http":
        serve_http(options.port)
    else:
        serve_stdio()
