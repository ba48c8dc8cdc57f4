"""Hand-written skills from a ``skills/`` directory: one folder per skill, ``SKILL.md`` inside.

What is read is bounded and stays inside the directory: a symlink anywhere is refused (it could
point out of it), as are a file over ``max_file_bytes``, a skill of more than ``max_files``
files or more than ``MAX_SKILL_BYTES`` in all, and a folder whose name is not a valid skill
name or differs from its frontmatter ``name``. Each refusal is a ``ModuleProblem`` naming the
file, reported as module problems are; the other skills are still served.

A hand-written skill may name the tools it describes in the frontmatter's ``allowed-tools``
(space-separated, as the Agent Skills format has it); one that replaces a generated skill of
the same name also describes that skill's tools, so it is hidden from whoever they are hidden from.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from apcore_mcp.tools.problems import ModuleProblem
from apcore_mcp.tools.skills.frontmatter import NAME_PATTERN, FrontmatterError
from apcore_mcp.tools.skills.model import DIRECTORY, SKILL_FILE, Skill, make_skill

MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 512
"""The SEP's ceiling on a skill's files (``SKILL.md`` included)."""
MAX_SKILL_BYTES = 16 * 1024 * 1024
"""The SEP's ceiling on a skill's total size."""


class SkillFileError(Exception):
    """One skill folder that cannot be served; ``path`` names the file or folder at fault."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path


def load_skills_dir(
    root: str | os.PathLike[str], *, max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES
) -> tuple[list[Skill], list[ModuleProblem]]:
    """The skills under ``root`` (in name order) and the problems of the folders refused.

    A missing ``root`` is a problem too: a configured directory that is not there is a typo.
    """
    base = Path(root)
    if not base.is_dir() or base.is_symlink():
        return [], [ModuleProblem(f"skills directory {base} is not a directory", file=str(base))]
    skills: list[Skill] = []
    problems: list[ModuleProblem] = []
    for folder in sorted(base.iterdir()):
        try:
            skills.append(_load_skill(folder, max_file_bytes=max_file_bytes, max_files=max_files))
        except SkillFileError as exc:
            problems.append(ModuleProblem(f"skill not served: {exc}", file=str(exc.path)))
    return skills, problems


def _load_skill(folder: Path, *, max_file_bytes: int, max_files: int) -> Skill:
    info = folder.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise SkillFileError(folder, "a symlink (skills are read from regular folders only)")
    if not stat.S_ISDIR(info.st_mode):
        raise SkillFileError(folder, "not a folder (each skill is a folder holding SKILL.md)")
    if not NAME_PATTERN.match(folder.name):
        raise SkillFileError(folder, "folder name is not a skill name (1-64 of a-z, 0-9, single hyphens)")
    files = _read_files(folder, max_file_bytes=max_file_bytes, max_files=max_files)
    if SKILL_FILE not in files:
        raise SkillFileError(folder, f"no {SKILL_FILE} in the folder")
    skill_md = files.pop(SKILL_FILE)
    try:
        skill = make_skill(folder.name, "", skill_md, other_files=files, origin=DIRECTORY)
    except (FrontmatterError, UnicodeDecodeError) as exc:
        raise SkillFileError(folder / SKILL_FILE, str(exc)) from None
    if skill.frontmatter.get("name") != folder.name:
        raise SkillFileError(folder / SKILL_FILE, f"frontmatter name must equal the folder name {folder.name!r}")
    declared = skill.frontmatter.get("allowed-tools")
    tools = declared.split() if isinstance(declared, str) else []
    return replace(skill, description=str(skill.frontmatter["description"]), tools=tuple(sorted(set(tools))))


def _read_files(folder: Path, *, max_file_bytes: int, max_files: int) -> dict[str, bytes]:
    """Every regular file under ``folder`` by its ``/``-separated relative path, within the bounds."""
    files: dict[str, bytes] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames.sort()
        for entry in [*dirnames, *sorted(filenames)]:
            path = here / entry
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise SkillFileError(path, "a symlink (it could lead out of the skills directory)")
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise SkillFileError(path, "not a regular file")
            if len(files) >= max_files:
                raise SkillFileError(folder, f"more than {max_files} files")
            if info.st_size > max_file_bytes:
                raise SkillFileError(path, f"{info.st_size} bytes, over the {max_file_bytes}-byte limit")
            total += info.st_size
            if total > MAX_SKILL_BYTES:
                raise SkillFileError(folder, f"over {MAX_SKILL_BYTES} bytes in all")
            files[path.relative_to(folder).as_posix()] = _read_bounded(path, max_file_bytes)
    return files


def _read_bounded(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refused if it grew past ``max_bytes`` since it was measured."""
    # O_NOFOLLOW: a file swapped for a symlink after the walk is refused, not followed.
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SkillFileError(path, f"over the {max_bytes}-byte limit")
    return data


def with_hand_written(generated: Iterable[Skill], written: Iterable[Skill]) -> list[Skill]:
    """``generated`` with ``written`` added; a written skill replaces a generated one of its name.

    The replacement also describes the replaced skill's tools (see the module docstring).
    """
    by_name = {skill.name: skill for skill in generated}
    for skill in written:
        replaced = by_name.get(skill.name)
        tools = set(skill.tools) | set(replaced.tools if replaced is not None else ())
        by_name[skill.name] = replace(skill, tools=tuple(sorted(tools)))
    return [by_name[name] for name in sorted(by_name)]
