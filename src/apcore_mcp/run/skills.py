"""``apcore-mcp skills export DIR [SERVE FLAGS]``: the served skills written as files.

For hosts that load skills from disk: each skill becomes ``DIR/<name>/`` holding its files,
byte for byte what ``skills/get`` lists (so the digests match). The modules are discovered
as serving would discover them, from the same flags and ``APCORE_MCP_*`` variables
(``--extensions-dir``, ``--skills-dir``, ``--skills-group-by``, ``--tags``, ``--prefix``);
skills are exported whether or not ``--skills`` is given. Exit 0 when written, 1 on a usage
error, 2 when the extensions or skills cannot be read.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from apcore_mcp.mcp.skills import skill_catalog
from apcore_mcp.run.cli import EXIT_INVALID, EXIT_STARTUP, UsageError, discovered_registry, parse_launch
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.discovery import DiscoveryError
from apcore_mcp.tools.problems import ModuleProblemsError
from apcore_mcp.tools.skills.model import Skill

USAGE = "usage: apcore-mcp skills export DIR --extensions-dir DIR [serve flags]"


class ExportError(Exception):
    """A skill that cannot be written where it belongs (a path leading out, a symlinked folder)."""


def skills_main(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Run ``skills export``; the exit status."""
    args = list(argv)
    if len(args) < 2 or args[0] != "export" or args[1].startswith("-"):
        return _fail(USAGE, EXIT_INVALID)
    target = Path(args[1])
    try:
        launch = parse_launch(args[2:], os.environ if environ is None else environ, raising=True)
        settings = Settings(**{**launch.values, "skills": True})
    except (UsageError, SettingError, ValueError) as exc:
        return _fail(str(exc), getattr(exc, "code", EXIT_INVALID))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        registry = discovered_registry(launch.extensions_dir, strict=settings.strict_modules)
        catalog = ToolCatalog(registry, tags=settings.tags, prefix=settings.prefix)
        catalog.load()
        skills = skill_catalog(catalog, settings)
        assert skills is not None  # skills=True
        written = [export_skill(skill, target) for skill in skills.current()]
    except (DiscoveryError, ModuleProblemsError, ExportError, OSError) as exc:
        return _fail(str(exc), EXIT_STARTUP)
    for folder in written:
        print(f"wrote {folder}")
    return 0


def export_skill(skill: Skill, target: Path) -> Path:
    """Write ``skill``'s files under ``target/<name>/``; its folder.

    Raises:
        ExportError: a file path that would land outside the folder, or a folder that is a symlink.
    """
    folder = target / skill.name
    if folder.is_symlink() or PurePosixPath(skill.name).name != skill.name:
        raise ExportError(f"skill {skill.name!r}: its folder {folder} is a symlink or not a plain name")
    for path, file in skill.files.items():
        parts = PurePosixPath(path).parts
        if not parts or PurePosixPath(path).is_absolute() or any(p in ("..", ".") for p in parts):
            raise ExportError(f"skill {skill.name!r}: file path {path!r} would leave its folder")
        destination = folder.joinpath(*parts)
        if destination.is_symlink():  # writing would follow it out of the folder
            raise ExportError(f"skill {skill.name!r}: {destination} is a symlink")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(file.data)
    return folder


def _fail(message: str, code: int) -> int:
    print(f"apcore-mcp skills: {message}", file=sys.stderr)
    return code
