"""A SKILL.md's frontmatter: the YAML block between the opening ``---`` lines, and the name rules.

The wire carries the frontmatter as a JSON object identical to what the file says, so it is
parsed from the bytes served, never kept apart from them.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

NAME_PATTERN = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
"""The Agent Skills naming rule: 1-64 of ``a-z0-9-``, no leading, trailing or doubled hyphen."""
MAX_DESCRIPTION = 1024
"""The Agent Skills limit on ``description`` (characters)."""
_BLOCK = re.compile(r"^\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)


class FrontmatterError(ValueError):
    """A SKILL.md whose frontmatter is missing, not YAML, or lacks a name or description."""


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The frontmatter of ``text`` as a dict holding at least a string ``name`` and ``description``.

    Raises:
        FrontmatterError: no leading ``---`` block, not a YAML mapping, or a required field missing.
    """
    match = _BLOCK.match(text)
    if match is None:
        raise FrontmatterError("SKILL.md must begin with a --- delimited YAML frontmatter block")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"SKILL.md frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise FrontmatterError("SKILL.md frontmatter must be a YAML mapping")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise FrontmatterError(f"SKILL.md frontmatter needs a non-empty string {key!r}")
    return data


def render_frontmatter(fields: dict[str, Any]) -> str:
    """``fields`` as a ``---`` block whose YAML parses back to exactly ``fields`` (key order kept)."""
    body = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=1 << 30)
    return f"---\n{body}---\n"


def skill_name(key: str) -> str | None:
    """A valid skill name made from a group key (``My_Tools.v2`` -> ``my-tools-v2``), or ``None``."""
    name = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")
    name = re.sub(r"-{2,}", "-", name)[:64].rstrip("-")
    return name if NAME_PATTERN.match(name) else None
