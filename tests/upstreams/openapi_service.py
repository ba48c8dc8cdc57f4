"""A small HTTP API with an OpenAPI 3.1 document, for the OpenAPI tests: a Starlette app, nothing of apcore-mcp.

``python tests/upstreams/openapi_service.py --port N [--secret S]`` serves it on 127.0.0.1
(``/health`` answers once it listens); ``service_app(secret)`` is the same app for uvicorn in a
test's own event loop. ``/openapi.json`` names ``/api`` as its server, a relative URL that
apcore-mcp resolves against the document's own URL.

Operations: ``listItems`` (GET, query ``limit`` and the array ``tag``), ``getItem`` (GET
``/items/{itemId}``; ``missing`` answers 404 with a body; the answer shows the raw path it
arrived on), ``createItem`` (POST, a ``$ref``'d JSON body), ``replaceItem`` (PUT),
``renameItem`` (PATCH), ``deleteItem`` (DELETE, recorded in ``deleted``), ``whoAmI`` (needs
``Authorization: Bearer <secret>``; a wrong one is echoed back in its 401 body), ``explode``
(500 with a body), ``slow`` (sleeps ``seconds``), ``huge`` (``size`` bytes of JSON),
``headers`` (the request's headers), ``tagged`` (a header parameter), ``plain`` (text/plain).
``app.state.paths`` has the raw path of every request, before decoding or routing.
``app.state.documents`` maps ``NAME`` to the document served at ``/NAME.json`` (``openapi``: the
one above); a test adds others (a document naming another origin, a path that is not a path).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

ITEM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "number", "minimum": 0}},
    "required": ["name"],
}
ITEM_ID = {"name": "itemId", "in": "path", "required": True, "schema": {"type": "string"}}


def _op(operation_id: str, summary: str, **extra: Any) -> dict[str, Any]:
    return {"operationId": operation_id, "summary": summary, "responses": {"200": {"description": "ok"}}, **extra}


def _body(ref: str = "#/components/schemas/NewItem") -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": ref}}}}


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Shop", "version": "1.0"},
    "servers": [{"url": "/api"}],
    "paths": {
        "/items": {
            "get": _op(
                "listItems",
                "List the items",
                parameters=[
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                    {"name": "tag", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                ],
            ),
            "post": _op("createItem", "Create an item", requestBody=_body()),
        },
        "/items/{itemId}": {
            "parameters": [ITEM_ID],
            "get": _op("getItem", "One item", description="The item and the raw path the request used."),
            "put": _op("replaceItem", "Replace an item", requestBody=_body()),
            "patch": _op("renameItem", "Rename an item", requestBody=_body()),
            "delete": _op("deleteItem", "Delete an item for good"),
        },
        "/secure": {"get": _op("whoAmI", "Needs the bearer token")},
        "/explode": {"get": _op("explode", "Fails with a 500")},
        "/slow": {
            "get": _op("slow", "Sleeps", parameters=[{"name": "seconds", "in": "query", "schema": {"type": "number"}}])
        },
        "/huge": {
            "get": _op(
                "huge", "A large body", parameters=[{"name": "size", "in": "query", "schema": {"type": "integer"}}]
            )
        },
        "/headers": {"get": _op("headers", "The request's headers")},
        "/tagged": {
            "get": _op(
                "tagged",
                "A header parameter",
                parameters=[{"name": "X-Tag", "in": "header", "required": True, "schema": {"type": "string"}}],
            )
        },
        "/plain": {"get": _op("plain", "Plain text")},
    },
    "components": {"schemas": {"NewItem": ITEM}},
}


def service_app(secret: str = "") -> Starlette:
    """The API; ``app.state.deleted`` lists the ids deleted, ``app.state.seen`` every request's headers."""

    async def document(request: Request) -> Response:
        found = request.app.state.documents.get(request.path_params["name"])
        return JSONResponse(found) if found is not None else PlainTextResponse("no such document", status_code=404)

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    def record(request: Request) -> None:
        request.app.state.seen.append(dict(request.headers))

    async def items(request: Request) -> Response:
        record(request)
        if request.method == "POST":
            return JSONResponse({"id": "new", **await request.json()}, status_code=201)
        limit = int(request.query_params.get("limit", "3"))
        tags = request.query_params.getlist("tag")
        return JSONResponse([{"id": str(n), "tags": tags} for n in range(limit)])

    async def item(request: Request) -> Response:
        record(request)
        item_id = request.path_params["itemId"]
        raw_path = request.scope["raw_path"].decode("latin-1")
        if item_id == "missing":
            return JSONResponse({"error": f"no item {item_id}"}, status_code=404)
        if request.method == "DELETE":
            request.app.state.deleted.append(item_id)
            return Response(status_code=204)
        if request.method in ("PUT", "PATCH"):
            return JSONResponse({"id": item_id, "method": request.method, **await request.json()})
        return JSONResponse({"id": item_id, "raw_path": raw_path})

    async def secure(request: Request) -> Response:
        record(request)
        given = request.headers.get("authorization", "")
        if given != f"Bearer {secret}":
            return PlainTextResponse(f"bad credentials: {given}", status_code=401)
        return JSONResponse({"user": "alice", "credential": given})  # a careless API echoing it

    async def explode(request: Request) -> Response:
        return PlainTextResponse("the database is on fire", status_code=500)

    async def slow(request: Request) -> Response:
        await asyncio.sleep(float(request.query_params.get("seconds", "5")))
        return JSONResponse({"slept": True})

    async def huge(request: Request) -> Response:
        size = int(request.query_params.get("size", "1000"))
        return Response(json.dumps({"blob": "x" * size}), media_type="application/json")

    async def headers(request: Request) -> Response:
        record(request)
        return JSONResponse(dict(request.headers))

    async def tagged(request: Request) -> Response:
        return JSONResponse({"tag": request.headers.get("x-tag")})

    async def plain(request: Request) -> Response:
        return PlainTextResponse("just text")

    app = Starlette(
        routes=[
            Route("/{name}.json", document),
            Route("/health", health),
            Route("/api/items", items, methods=["GET", "POST"]),
            Route("/api/items/{itemId}", item, methods=["GET", "PUT", "PATCH", "DELETE"]),
            Route("/api/secure", secure),
            Route("/api/explode", explode),
            Route("/api/slow", slow),
            Route("/api/huge", huge),
            Route("/api/headers", headers),
            Route("/api/tagged", tagged),
            Route("/api/plain", plain),
        ]
    )
    app.state.documents = {"openapi": DOCUMENT}
    app.state.deleted = []
    app.state.seen = []
    app.state.paths = []
    app.add_middleware(_RawPaths, paths=app.state.paths)
    return app


class _RawPaths:
    """Records each request's path as sent (``raw_path``: before any decoding or routing)."""

    def __init__(self, app: ASGIApp, paths: list[str]) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["raw_path"].decode("latin-1"))
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", default="")
    args = parser.parse_args()
    uvicorn.run(service_app(args.secret), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
