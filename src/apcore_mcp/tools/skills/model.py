"""The skill model: one frozen ``Skill`` per skill, a ``SkillSet`` holding them by name.

A skill is a folder of files whose entry point is ``SKILL.md`` (frontmatter, then Markdown).
Every route (``skills/list``, ``skills/get``, ``skill://`` resources, the explorer, the
export command) renders from this one model, so the bytes and digests agree everywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from apcore_mcp.tools.skills.frontmatter import parse_frontmatter

SKILL_FILE = "SKILL.md"
"""The entry file every skill has; its frontmatter is served unchanged."""
GENERATED = "generated"
DIRECTORY = "directory"
UPSTREAM_PREFIX = "upstream:"


def upstream_origin(server: str) -> str:
    """The ``origin`` of a skill relayed from the upstream server named ``server``."""
    return f"{UPSTREAM_PREFIX}{server}"


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill: its bytes with their SHA-256 (hex) and size, computed once."""

    path: str
    data: bytes
    sha256: str = field(init=False)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())
        object.__setattr__(self, "size", len(self.data))


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill as served.

    ``files`` maps each path relative to the skill's folder (``SKILL.md`` first, the rest
    sorted) to its ``SkillFile``; ``tools`` names the tools the skill describes, which is what
    decides who may see it; ``origin`` is ``generated``, ``directory`` or ``upstream:<server>``.
    """

    name: str
    description: str
    files: Mapping[str, SkillFile]
    tools: tuple[str, ...] = ()
    origin: str = GENERATED
    frontmatter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The SKILL.md frontmatter as a mapping, identical to the file's (served as the entry's ``frontmatter``)."""

    @property
    def skill_md(self) -> str:
        """The ``SKILL.md`` text, frontmatter unchanged."""
        return self.files[SKILL_FILE].data.decode("utf-8")

    @property
    def size(self) -> int:
        """The bytes of all the skill's files together."""
        return sum(f.size for f in self.files.values())


def make_skill(
    name: str,
    description: str,
    skill_md: str | bytes,
    *,
    other_files: Mapping[str, bytes] | None = None,
    tools: Iterable[str] = (),
    origin: str = GENERATED,
    frontmatter: Mapping[str, Any] | None = None,
) -> Skill:
    """Build a ``Skill`` with its files in a deterministic order (``SKILL.md``, then sorted).

    ``frontmatter`` defaults to the one parsed from ``skill_md``.

    Raises:
        FrontmatterError: ``frontmatter`` not given and ``skill_md`` has none that is usable.
        UnicodeDecodeError: ``skill_md`` is not UTF-8.
    """
    data = skill_md.encode("utf-8") if isinstance(skill_md, str) else skill_md
    if frontmatter is None:
        frontmatter = parse_frontmatter(data.decode("utf-8"))
    files: dict[str, SkillFile] = {SKILL_FILE: SkillFile(SKILL_FILE, data)}
    for path in sorted(other_files or {}):
        if path != SKILL_FILE:
            files[path] = SkillFile(path, (other_files or {})[path])
    return Skill(
        name=name,
        description=description,
        files=MappingProxyType(files),
        tools=tuple(sorted(set(tools))),
        origin=origin,
        frontmatter=MappingProxyType(dict(frontmatter)),
    )


@dataclass(frozen=True, slots=True)
class SkillSet:
    """The skills a server offers, by name, in name order; ``generation`` grows on each change."""

    skills: Mapping[str, Skill] = field(default_factory=lambda: MappingProxyType({}))
    generation: int = 0

    @classmethod
    def of(cls, skills: Iterable[Skill], *, generation: int = 0) -> SkillSet:
        """A set of ``skills``; a later skill of a name already seen replaces the earlier one."""
        by_name: dict[str, Skill] = {}
        for skill in skills:
            by_name[skill.name] = skill
        ordered = {name: by_name[name] for name in sorted(by_name)}
        return cls(skills=MappingProxyType(ordered), generation=generation)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills.values())

    def __len__(self) -> int:
        return len(self.skills)

    def merged(self, other: Iterable[Skill]) -> SkillSet:
        """This set with ``other``'s skills added (they win on a name clash), next generation."""
        return SkillSet.of([*self, *other], generation=self.generation + 1)
