"""Skill folders written for the skills tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as types
from pydantic import ConfigDict


def write_skill(root: Path, name: str, body: str = "Use it well.\n", extra: str = "") -> Path:
    """``root/name/SKILL.md`` with a valid frontmatter (``extra``: more YAML lines); the folder."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Hand-written {name}\n{extra}---\n{body}")
    return folder


class AnyParams(types.RequestParams):
    model_config = ConfigDict(extra="allow")


class SkillsMethod(types.Request[AnyParams, str]):
    """``skills/list``/``skills/get``: the Python SDK has no skills API yet, so sent as raw requests."""


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


async def skills_request(session: Any, method: str, **params: Any) -> dict[str, Any]:
    """One skills method through the SDK session (its envelope stamped); the wire result as a dict."""
    request = SkillsMethod(method=method, params=AnyParams(**params))
    result = await session.send_request(request, AnyResult)
    return dict(result.model_dump(by_alias=True, exclude_none=True))
