"""Reading an OpenAPI document (a URL or a file; JSON or YAML) and the base URL its calls go to.

The document is read once, when its server is mounted: from a URL within the server's
``timeout`` for the whole read (connect, headers and body: a document trickling in cannot hold
the start), no redirects and at most ``max_bytes`` read; from a file after checking its size.
OpenAPI 3.0 and 3.1 are read; a Swagger 2.0 document, or anything else, is refused naming what
it is. No header of the entry is sent with the document request: those go only to the API.

The entry's headers go only to the origin the operator named: the entry's ``baseUrl``, or the
origin the document was read from. Whoever can change a fetched document (hosted apart from the
API, a CDN) must not choose where the credentials go, so a ``servers`` URL on another origin is
refused unless ``baseUrl`` names where calls go. A document read from a file has no origin of
its own: the operator chose the file as they chose ``mcp.json``, so its absolute ``servers``
URL is taken as written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx2
import yaml

from apcore_mcp.upstream.errors import UpstreamUnavailable
from apcore_mcp.upstream.specs import ServerSpec

_VARIABLE = re.compile(r"\{([^{}]+)\}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class DocumentError(UpstreamUnavailable):
    """The document could not be read, is not OpenAPI 3.x, or gives no usable base URL."""


async def read_document(spec: ServerSpec, max_bytes: int) -> dict[str, Any]:
    """The parsed document of ``spec.openapi``.

    Raises:
        DocumentError: unreadable, too large, not JSON or YAML, or not OpenAPI 3.0 / 3.1.
    """
    location = spec.openapi or ""
    if location.startswith(("http://", "https://")):
        raw = await _fetch(spec, location, max_bytes)
    else:
        raw = _read_file(spec.name, Path(location), max_bytes)
    return _checked(spec.name, _parse(spec.name, raw))


async def _fetch(spec: ServerSpec, url: str, max_bytes: int) -> bytes:
    fail = f"openapi server {spec.name!r}: document not read"
    try:
        with anyio.fail_after(spec.timeout):  # the whole read; httpx's timeout acts per read
            return await _download(spec, url, max_bytes, fail)
    except (TimeoutError, httpx2.TimeoutException):
        raise DocumentError(spec.name, f"{fail}: not complete within {spec.timeout:g}s (its timeout)") from None
    except httpx2.HTTPError as exc:
        raise DocumentError(spec.name, f"{fail}: {type(exc).__name__}") from None


async def _download(spec: ServerSpec, url: str, max_bytes: int, fail: str) -> bytes:
    async with (
        httpx2.AsyncClient(timeout=spec.timeout, follow_redirects=False) as client,
        client.stream("GET", url, headers={"Accept": "application/json, application/yaml"}) as response,
    ):
        if response.status_code != 200:
            raise DocumentError(spec.name, f"{fail}: HTTP {response.status_code}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise DocumentError(spec.name, f"{fail}: larger than {max_bytes} bytes")
        return bytes(body)


def _read_file(server: str, path: Path, max_bytes: int) -> bytes:
    fail = f"openapi server {server!r}: document file not read"
    try:
        if path.stat().st_size > max_bytes:
            raise DocumentError(server, f"{fail}: larger than {max_bytes} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise DocumentError(server, f"{fail} ({exc.strerror or type(exc).__name__})") from None


def _parse(server: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return yaml.safe_load(raw)  # YAML 1.2 is a superset of JSON; JSON first is only faster
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise DocumentError(server, f"openapi server {server!r}: document is neither JSON nor YAML{where}") from None


def _checked(server: str, document: Any) -> dict[str, Any]:
    said = f"openapi server {server!r}: "
    if not isinstance(document, dict):
        raise DocumentError(server, said + "document is not an object")
    if "swagger" in document:
        raise DocumentError(
            server, said + f"Swagger {document['swagger']} is not supported; convert it to OpenAPI 3 (3.0 or 3.1)"
        )
    version = document.get("openapi")
    if not isinstance(version, str) or not version.startswith(("3.0", "3.1")):
        raise DocumentError(server, said + f"not an OpenAPI 3.0 or 3.1 document (openapi: {version!r})")
    if not isinstance(document.get("paths", {}), dict):
        raise DocumentError(server, said + "paths must be an object")
    return document


def base_url(spec: ServerSpec, document: dict[str, Any]) -> str:
    """Where calls go: ``baseUrl``, else the document's first ``servers`` URL (its variables at their
    defaults) resolved against the document's URL, which must keep to the document's origin.

    Raises:
        DocumentError: neither gives an absolute http(s) URL, or the ``servers`` URL of a fetched
            document is on another origin (see the module doc).
    """
    if spec.base_url is not None:
        return spec.base_url.rstrip("/")
    servers = document.get("servers")
    first: dict[str, Any] = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], dict) else {}
    declared = str(first.get("url") or "")
    variables: dict[str, Any] = first["variables"] if isinstance(first.get("variables"), dict) else {}
    url = _VARIABLE.sub(lambda m: str((variables.get(m.group(1)) or {}).get("default", m.group(0))), declared)
    location = spec.openapi or ""
    fetched = location.startswith(("http://", "https://"))
    if fetched:
        url = urljoin(location, url or "/")
    if urlsplit(url).scheme not in ("http", "https") or "{" in url:
        found = f"servers[0].url is {declared!r}" if declared else "the document names no servers"
        raise DocumentError(
            spec.name, f"openapi server {spec.name!r}: no absolute base URL ({found}); set baseUrl in its entry"
        )
    if fetched and origin(url) != origin(location):
        said = f"openapi server {spec.name!r}: servers[0].url is on {origin(url)}"
        raise DocumentError(
            spec.name,
            f"{said}, not on {origin(location)} where the document was read; its headers go only to the "
            f"document's own origin or its baseUrl: set baseUrl in its entry to call {origin(url)}",
            public=f"openapi server {spec.name!r}: servers[0].url is on another origin than the document; "
            "set baseUrl in its entry (see the server log)",
        )
    return url.rstrip("/")


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url``, the port written even when it is the scheme's default."""
    parsed = httpx2.URL(url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{parsed.scheme}://{host}:{parsed.port or _DEFAULT_PORTS.get(parsed.scheme)}"
