"""The frame the explorer shows a tool's MCP Apps view in: ``{prefix}/view-frame``.

A view is a whole HTML page with its own inline script, which the explorer page's policy (inline
code by hash only) would block in an ``srcdoc`` frame, since such a frame inherits it. So the page
frames this small document instead, in ``<iframe sandbox="allow-scripts">`` (an opaque origin: no
access to the page, its storage or its cookies, and no same-origin requests). The document
carries no view and no data: it waits for the page to post the view's HTML (read by the page
through MCP, so every visibility rule applied) and writes it over itself, keeping its own
policy: inline script and style, images and media from ``data:``/``blob:`` only, no network
(``connect-src 'none'``), no frames, no forms, no ``<base>``; framed by the explorer only.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

FRAME_PATH = "/view-frame"
VIEW_MESSAGE = "apcore-mcp/view"
READY_MESSAGE = "apcore-mcp/view-ready"

FRAME_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "media-src data: blob:; font-src data:; connect-src 'none'; frame-src 'none'; worker-src 'none'; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'self'; sandbox allow-scripts"
)
"""No external origin, whatever the view declares: the explorer shows views that need none."""

FRAME_DOCUMENT = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>view</title></head><body><script>
"use strict";
addEventListener("message", function take(event) {{
  const data = event.data;
  if (event.source !== parent || !data || data.type !== "{VIEW_MESSAGE}" || typeof data.html !== "string") return;
  removeEventListener("message", take);
  document.open();
  document.write(data.html);
  document.close();
}});
parent.postMessage({{ type: "{READY_MESSAGE}" }}, "*");
</script></body></html>
""".encode()

FRAME_HEADERS = {
    "Content-Security-Policy": FRAME_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


async def view_frame(_request: Request) -> Response:
    return Response(FRAME_DOCUMENT, media_type="text/html; charset=utf-8", headers=FRAME_HEADERS)


def view_frame_routes(prefix: str) -> list[BaseRoute]:
    return [Route(f"{prefix}{FRAME_PATH}", view_frame, methods=["GET"])]
