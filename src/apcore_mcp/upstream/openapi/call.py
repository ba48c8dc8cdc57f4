"""One call of an OpenAPI operation: the HTTP request built from the arguments, the response as a tool result.

Path parameters are percent-encoded whole (``/``, ``?``, ``#`` and ``.`` included), so a value
stays inside its own segment. A header argument must be printable ASCII, as HTTP header values
are, and is refused naming the parameter otherwise. The request carries the entry's ``headers``
and the W3C trace context, never anything of the caller's request. The response body is read up
to ``max_bytes``; a longer one fails the call (``UpstreamMessageTooLarge``) instead of being cut
silently.

A 2xx JSON body becomes the result's ``structuredContent`` (an array or a scalar as
``{"result": ...}``: MCP's structured content is an object) and its text; any other body is
text. A non-2xx answer is a tool error naming the operation and the status, with the start of
the body. The values of the config's secrets are masked in every text this returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx2
import mcp.types as types
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from apcore_mcp._redaction import redact
from apcore_mcp.upstream.errors import UpstreamMessageTooLarge, UpstreamTimeout, UpstreamUnavailable
from apcore_mcp.upstream.expand import Redactor
from apcore_mcp.upstream.openapi.operations import BODY, Operation

MAX_ERROR_TEXT = 1000
"""Characters of a failed response's body shown in the tool error."""
_JSON_TYPES = ("application/json", "+json")
_FORBIDDEN_IN_HEADERS = ("\r", "\n", "\0")


class ArgumentError(ValueError):
    """An argument the request cannot carry (a header value with a line break or outside printable ASCII)."""


def build_request(
    client: httpx2.AsyncClient,
    base: str,
    operation: Operation,
    arguments: Mapping[str, Any],
    headers: Mapping[str, str],
) -> httpx2.Request:
    """The request for ``operation`` with ``arguments`` (already checked against its input schema)."""
    path = operation.path
    query: list[tuple[str, str | int | float | bool | None]] = []
    sent = {"Accept": "application/json, */*;q=0.5"}
    for parameter in operation.parameters:
        if parameter.name not in arguments:
            continue
        value = arguments[parameter.name]
        if parameter.location == "path":
            # Dots too: httpx would resolve a "." or ".." segment and leave the operation's path.
            segment = quote(_text(value), safe="").replace(".", "%2E")
            path = path.replace("{" + parameter.name + "}", segment)
        elif parameter.location == "query":
            values = value if isinstance(value, list) else [value]
            query += [(parameter.name, _text(item)) for item in values]
        else:
            sent[parameter.name] = _header_value(parameter.name, _text(value))
    sent.update(headers)  # the entry's headers win over any the document lets a caller set
    propagate.inject(sent)
    body = arguments.get(BODY) if operation.has_body else None
    content = json.dumps(body).encode() if operation.has_body and BODY in arguments else None
    if content is not None:
        sent["Content-Type"] = "application/json"
    return client.build_request(operation.method, base + path, params=query, headers=sent, content=content)


def _header_value(name: str, text: str) -> str:
    if any(char in text for char in _FORBIDDEN_IN_HEADERS):
        raise ArgumentError(f"argument {name!r} (a header) must not contain line breaks")
    # Header values are ASCII on the wire (RFC 9110 leaves other octets opaque); refusing says so
    # to the caller, where sending would fail deep in the HTTP client as an internal error.
    outside = next((char for char in text if char != "\t" and not " " <= char <= "~"), None)
    if outside is not None:
        raise ArgumentError(
            f"argument {name!r} (a header) must be printable ASCII (HTTP header values are), not {outside!r}"
        )
    return text


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


async def send(
    client: httpx2.AsyncClient,
    request: httpx2.Request,
    operation: Operation,
    *,
    server: str,
    max_bytes: int,
    redactor: Redactor,
) -> types.CallToolResult:
    """Send ``request`` in a CLIENT span and make its response a tool result (see the module doc).

    Raises:
        UpstreamTimeout: no answer within the client's timeout.
        UpstreamUnavailable: the API could not be reached.
        UpstreamMessageTooLarge: the response body is over ``max_bytes``.
    """
    said = f"openapi server {server!r}: {operation.name}"
    attributes = {
        "http.request.method": operation.method,
        "server.address": request.url.host,
        "url.template": operation.path,
    }
    tracer = trace.get_tracer("apcore_mcp")
    with tracer.start_as_current_span(f"HTTP {operation.method}", kind=SpanKind.CLIENT, attributes=attributes) as span:
        try:
            response = await client.send(request, stream=True)
            try:
                status = response.status_code
                span.set_attribute("http.response.status_code", status)
                body = await _read(response, max_bytes, server, said)
            finally:
                await response.aclose()
        except (httpx2.HTTPError, UpstreamMessageTooLarge) as exc:
            span.set_attribute("error.type", type(exc).__name__)
            if isinstance(exc, UpstreamMessageTooLarge):
                raise
            if isinstance(exc, httpx2.TimeoutException):
                raise UpstreamTimeout(server, f"{said}: no answer in time ({type(exc).__name__})") from None
            raise UpstreamUnavailable(server, f"{said}: the API could not be reached ({type(exc).__name__})") from None
        if status >= 400:
            span.set_attribute("error.type", str(status))
            span.set_status(Status(StatusCode.ERROR))
    text = redact(redactor.redact(body.decode("utf-8", errors="replace")))
    if not 200 <= status < 300:
        reason = f"HTTP {status} {response.reason_phrase}".strip()
        shown = f": {text[:MAX_ERROR_TEXT]}" + ("…" if len(text) > MAX_ERROR_TEXT else "") if text else ""
        return _result(f"{operation.name} failed: {reason}{shown}", error=True)
    if not text:
        return _result(f"HTTP {status} (no content)")
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind.endswith(_JSON_TYPES):
        try:
            value = json.loads(text)
        except ValueError:
            return _result(text)
        return _result(text, structured=value if isinstance(value, dict) else {"result": value})
    return _result(text)


async def _read(response: httpx2.Response, max_bytes: int, server: str, said: str) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():  # decoded: a compressed body is bounded as it expands
        body += chunk
        if len(body) > max_bytes:
            raise UpstreamMessageTooLarge(
                server, f"{said}: response body larger than {max_bytes} bytes (upstream_max_message_bytes)"
            )
    return bytes(body)


def _result(text: str, *, structured: dict[str, Any] | None = None, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured, is_error=error)
