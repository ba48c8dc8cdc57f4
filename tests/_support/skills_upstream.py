"""The skills test upstream (``tests/upstreams/skills_server.py``): its spec file and ``mcpServers`` entry."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SKILLS_SERVER = Path(__file__).resolve().parents[1] / "upstreams" / "skills_server.py"


def skill_md(name: str, description: str, body: str = "") -> str:
    """A SKILL.md whose frontmatter names ``name`` and says ``description``."""
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\n{body}\n"


def skill(path: str, description: str = "A skill", body: str = "", **extra: Any) -> dict[str, Any]:
    """A spec entry: the skill at ``skill://<path>/``, named after its last segment."""
    files = {"SKILL.md": skill_md(path.rsplit("/", 1)[-1], description, body), **extra.pop("files", {})}
    return {"path": path, "files": files, **extra}


def write_spec(
    path: Path, skills: list[dict[str, Any]], tools: tuple[str, ...] = ("search",), *, log: Path | None = None
) -> Path:
    """The spec the skills upstream reads at each request (rewrite it to change what it offers);
    ``log`` gets one line per skills request it answers."""
    spec = {"tools": list(tools), "skills": skills, **({"log": str(log)} if log else {})}
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def skills_entry(spec: Path, **fields: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running the skills upstream with ``spec``."""
    return {"command": sys.executable, "args": [str(SKILLS_SERVER), str(spec)], "timeout": 20, **fields}
