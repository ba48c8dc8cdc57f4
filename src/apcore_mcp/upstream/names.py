"""Upstream names as apcore module ids: ``<server>.<tool>``, two segments, readable and injective.

apcore ids match ``^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$`` (at most 192 characters) and may
not start with a reserved segment. MCP tool names allow capitals, digits first, ``-``, ``.``
and more. The rule, for the server names of one config and for the tool names of one server:

1. A name that is already a valid segment (and fits) is used as is: ``get_sum`` stays ``get_sum``.
2. Any other name gets its readable form: a capital after a lower-case letter or digit starts a
   word (``getSum`` -> ``get_sum``), letters are lowered, every character but ``[a-z0-9_]``
   becomes ``_`` (``get-sum`` -> ``get_sum``, ``a.b`` -> ``a_b``), leading and trailing ``_``
   go, and a form that does not start with a letter gets ``t_`` (``9lives`` -> ``t_9lives``).
   A server whose form is a reserved first segment (``system``) gets a trailing ``_``.
3. A short hash of the original name (``_`` + 6 hex digits of its SHA-256) is appended only
   where the readable form is not unique: when another name of the same set has the same form
   (either as is or readable), or when the form had to be cut to fit. A name kept as is (rule 1)
   never gets one; every readable name that shares a form with another name gets one, so
   ``get-sum`` and ``Get-Sum`` become ``get_sum_<hash>`` and ``get_sum_<hash'>`` and neither
   depends on the order the upstream lists them in. Beside a tool named ``get_sum``, ``get-sum``
   is ``get_sum_<hash>``.

The result depends only on the set of names (never on listing order, time or process), so the
same config and the same upstream tools give the same ids after a restart and on every replica.
It does depend on the other names of the set: a tool the upstream adds later (``list_changed``)
whose form collides with an existing readable name gives that name its hash from then on.
The way back (id -> server and tool) is the table the source keeps, not a parse of the id:
calls always reach the upstream under its own name, and the explorer shows each tool's server
and its own name there (``module.upstream_origin``) to those who may see the tool.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

SEGMENT = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_ID_LENGTH = 192
MAX_SERVER_SEGMENT = 48
MAX_TOOL_SEGMENT = MAX_ID_LENGTH - MAX_SERVER_SEGMENT - 1
RESERVED_FIRST = frozenset({"acl", "apcore", "core", "internal", "plugin", "schema", "system"})
_HASH_LENGTH = 6
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_OTHER = re.compile(r"[^a-z0-9_]")


def readable(name: str) -> str:
    """``name``'s readable form (rule 2 of the module doc), before any cut or hash."""
    form = _OTHER.sub("_", _WORD_START.sub("_", name).lower()).strip("_") or "x"
    return form if form[0].isalpha() else "t_" + form


def _hashed(name: str, form: str, limit: int) -> str:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    return f"{form[: limit - _HASH_LENGTH - 1]}_{digest}"


def segments(names: Iterable[str], limit: int, *, reserved: frozenset[str] = frozenset()) -> dict[str, str]:
    """``name -> segment`` for one set of names (see the module doc); distinct names get distinct segments."""
    unique = sorted(set(names))
    kept = {name for name in unique if SEGMENT.match(name) and len(name) <= limit and name not in reserved}
    forms = {name: name if name in kept else readable(name) for name in unique}
    forms = {name: form + "_" if form in reserved else form for name, form in forms.items()}
    shared = Counter(forms.values())
    proposed = {
        name: form if name in kept or (shared[form] == 1 and len(form) <= limit) else _hashed(name, form, limit)
        for name, form in forms.items()
    }
    return distinct(proposed, set(), limit, first=kept)


def distinct(proposed: dict[str, str], used: set[str], limit: int, *, first: Iterable[str] = ()) -> dict[str, str]:
    """``proposed`` with any value already taken (in ``used`` or by an earlier name) given ``_2``, ``_3``...

    Names in ``first`` are placed first, then the others in sorted order: the outcome does not
    depend on the order they came in. Only a hash collision or a name equal to another's hash
    form gets here.
    """
    early = set(first)
    result: dict[str, str] = {}
    for name in sorted(proposed, key=lambda name: (name not in early, name)):
        candidate = base = proposed[name]
        counter = 2
        while candidate in used:
            suffix = f"_{counter}"
            candidate = base[: limit - len(suffix)] + suffix
            counter += 1
        used.add(candidate)
        result[name] = candidate
    return result


def server_segments(servers: Iterable[str]) -> dict[str, str]:
    """``server -> first segment`` for every server name of one config."""
    return segments(servers, MAX_SERVER_SEGMENT, reserved=RESERVED_FIRST)


def server_segment(server: str) -> str:
    """The first segment of ``server`` when it is the only server (see ``server_segments``)."""
    return server_segments([server])[server]


def module_id(server: str, tool: str) -> str:
    """The id of ``tool`` when it is the only tool of the only server."""
    return f"{server_segment(server)}.{segments([tool], MAX_TOOL_SEGMENT)[tool]}"


def module_ids(prefix: str, tools: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """``tool -> module id`` for one server's tools under the first segment ``prefix``.

    An id already in ``taken`` gets ``_2``, ``_3``... (see ``distinct``).
    """
    tool_segments = segments(tools, MAX_TOOL_SEGMENT)
    proposed = {tool: f"{prefix}.{segment}" for tool, segment in tool_segments.items()}
    kept = [tool for tool, segment in tool_segments.items() if segment == tool]
    return distinct(proposed, set(taken), MAX_ID_LENGTH, first=kept)
