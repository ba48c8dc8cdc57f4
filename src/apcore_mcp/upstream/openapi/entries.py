"""``--from-openapi [NAME=]URL_OR_FILE``: a document given on the command line as an ``openapi`` server entry.

The server is ``NAME`` when given; otherwise the document's file name without its extension,
or, when that says nothing (``openapi.json``, ``swagger.yaml``), the URL's host. The name is
chosen before the document is read, so it does not change when the API's title does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from apcore_mcp.upstream.specs import Problem

_NAMED = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_-]*)=(?P<document>.+)$")
_GENERIC = frozenset({"openapi", "swagger", "api", "spec", "docs", "schema", "v1", "v2", "v3"})
OPTION = "--from-openapi"


def openapi_entries(
    documents: Sequence[str], taken: Mapping[str, Any], problems: list[Problem]
) -> dict[str, dict[str, Any]]:
    """``name -> {"openapi": document}`` for each of ``documents``; a name already in ``taken`` is a problem."""
    entries: dict[str, dict[str, Any]] = {}
    for given in documents:
        name, document = server_name(given)
        if not document.strip():
            problems.append(Problem(OPTION, f"{given!r} names no document"))
        elif name in taken or name in entries:
            problems.append(Problem(OPTION, f"server {name!r} is already defined: name it with NAME={document}"))
        else:
            entries[name] = {"openapi": document}
    return entries


def server_name(given: str) -> tuple[str, str]:
    """``(server name, document)`` of one ``[NAME=]URL_OR_FILE`` (see the module doc)."""
    named = _NAMED.match(given)
    if named is not None:
        return named.group("name"), named.group("document")
    parts = urlsplit(given)
    path = parts.path if parts.scheme in ("http", "https") else given
    stem = PurePosixPath(path).stem
    if stem and stem.lower() not in _GENERIC:
        return stem, given
    return (parts.hostname or stem or "api"), given
