"""Upstream names as apcore module ids: ``<server>.<tool>``, two segments, stable and injective.

apcore ids match ``^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$`` (at most 192 characters) and may
not start with a reserved segment. MCP tool names allow capitals, digits first, ``-``, ``.``
and more. A name that is already a valid segment is used as is; any other is lowered, every
other character becomes ``_``, and a short hash of the original name is appended, so two
names that clean up alike (``Get-File`` and ``get_file``) still get different ids, and an id
never depends on which other tools exist (a ``list_changed`` cannot rename a tool). The way
back (id -> server and tool) is the table the source keeps, not a parse of the id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

SEGMENT = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_ID_LENGTH = 192
MAX_SERVER_SEGMENT = 48
MAX_TOOL_SEGMENT = MAX_ID_LENGTH - MAX_SERVER_SEGMENT - 1
RESERVED_FIRST = frozenset({"acl", "apcore", "core", "internal", "plugin", "schema", "system"})
_HASH_LENGTH = 6


def to_segment(name: str, limit: int) -> str:
    """``name`` as one id segment (see the module doc)."""
    if SEGMENT.match(name) and len(name) <= limit:
        return name
    cleaned = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "x"
    if not cleaned[0].isalpha():
        cleaned = "t_" + cleaned
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    return f"{cleaned[: limit - _HASH_LENGTH - 1]}_{digest}"


def server_segment(server: str) -> str:
    """The first segment of every module of ``server``; a reserved one gets a trailing ``_``."""
    segment = to_segment(server, MAX_SERVER_SEGMENT - 1)
    return segment + "_" if segment in RESERVED_FIRST else segment


def module_id(server: str, tool: str) -> str:
    return f"{server_segment(server)}.{to_segment(tool, MAX_TOOL_SEGMENT)}"


def module_ids(server: str, tools: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """``tool -> module id`` for one server's tools; a clash (even with ``taken``) gets ``_2``, ``_3``...

    Clashes need a hash collision on a cleaned name or a tool listed twice; they are resolved
    in sorted tool-name order so the outcome does not depend on the listing order.
    """
    used = set(taken)
    ids: dict[str, str] = {}
    for tool in sorted(set(tools)):
        candidate = base = module_id(server, tool)
        counter = 2
        while candidate in used:
            suffix = f"_{counter}"
            candidate = base[: MAX_ID_LENGTH - len(suffix)] + suffix
            counter += 1
        used.add(candidate)
        ids[tool] = candidate
    return ids
