"""Skill folders written for the skills tests."""

from __future__ import annotations

from pathlib import Path


def write_skill(root: Path, name: str, body: str = "Use it well.\n", extra: str = "") -> Path:
    """``root/name/SKILL.md`` with a valid frontmatter (``extra``: more YAML lines); the folder."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Hand-written {name}\n{extra}---\n{body}")
    return folder
