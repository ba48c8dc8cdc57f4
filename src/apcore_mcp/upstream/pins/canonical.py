"""A tool's pinned definition and its hash: SHA-256 of the RFC 8785 (JCS) canonical JSON.

The definition is what an agent reads and what decides a call's shape: name, description,
input and output schema, annotations. Nothing else of the listed tool (``_meta``, icons,
title) is pinned: those change without changing what the tool asks the model to do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import mcp.types as types
import rfc8785

PINNED_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")


class UnpinnableTool(ValueError):
    """The definition has a number JCS cannot represent exactly (an integer past 2**53, NaN)."""


def definition(tool: types.Tool) -> dict[str, Any]:
    """The pinned fields of ``tool`` as plain JSON, absent fields left out."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {key: dumped[key] for key in PINNED_FIELDS if key in dumped}


def digest(pinned: dict[str, Any]) -> str:
    """The hex SHA-256 of ``pinned``'s canonical JSON.

    Raises:
        UnpinnableTool: a value JCS refuses (such a tool is held, never served unpinned).
    """
    try:
        return hashlib.sha256(rfc8785.dumps(pinned)).hexdigest()
    except rfc8785.CanonicalizationError as exc:
        raise UnpinnableTool(str(exc)) from None


def skill_definition(name: str, files: Iterable[tuple[str, str, int]]) -> dict[str, Any]:
    """A relayed skill's pinned description: its ``name`` and each file's path, SHA-256 and size,
    sorted by path. The files' digests cover every byte an agent reads (``SKILL.md``, frontmatter
    included), so a changed word in any file changes the pin."""
    listed = [{"path": path, "sha256": sha, "size": size} for path, sha, size in sorted(files)]
    return {"name": name, "files": listed}
