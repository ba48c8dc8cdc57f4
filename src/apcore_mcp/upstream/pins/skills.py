"""Relayed upstream skills pinned beside their server's tools, in the same pins file.

A skill's pin is the SHA-256 of its canonical description (``canonical.skill_definition``: its
name and each file's path, SHA-256 and size). The rules are the tools' rules: a skill matching
its pin is served; a changed one ("drift") or one new to a server whose skills are pinned
(unless ``accept_new``) is held, never put on the shelf, so no route (``skills/list``,
``skills/get``, ``resources/read`` of its ``skill://`` files, the explorer, the export) can
reach it. A server whose skills were never pinned (none offered before, or a pins file written
before skills were pinned) has them pinned at first sight when the keeper may write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from apcore_mcp.tools.skills.model import Skill
from apcore_mcp.upstream.pins.canonical import UnpinnableTool, digest, skill_definition
from apcore_mcp.upstream.pins.store import Pin, Pins

if TYPE_CHECKING:
    from apcore_mcp.upstream.pins.keeper import Held, PinKeeper

logger = logging.getLogger(__name__)


def relayed_name(skill: Skill) -> str:
    """The name the upstream gives ``skill`` (``pdf`` of our ``docs/pdf``): its key in the pins file."""
    return skill.name.split("/", 1)[-1]


def skill_pin(skill: Skill) -> Pin:
    """The pin ``skill`` would take now."""
    files = [(f.path, f.sha256, f.size) for f in skill.files.values()]
    current = skill_definition(relayed_name(skill), files)
    try:
        return Pin(digest(current), current)
    except UnpinnableTool as exc:  # strings and small integers only: not expected, still never served unpinned
        return Pin(f"unpinnable: {exc}", current)


def changed_files(was: dict[str, Any] | None, now: dict[str, Any]) -> list[str]:
    """The paths whose digest or size differ between two skill definitions, or that only one lists."""
    before = {f["path"]: (f["sha256"], f["size"]) for f in (was or {}).get("files", []) if isinstance(f, dict)}
    after = {f["path"]: (f["sha256"], f["size"]) for f in now.get("files", []) if isinstance(f, dict)}
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


class SkillPins:
    """The skills' pins of one ``PinKeeper`` (which owns the file, its reloads and its writes)."""

    def __init__(self, keeper: PinKeeper, pins: Pins) -> None:
        self.keeper = keeper
        self.pins = pins
        self._held: dict[str, dict[str, Held]] = {}

    def admit(self, server: str, skills: Sequence[Skill], *, pin: bool = True) -> list[Skill]:
        """The skills of ``server`` to serve; the others are held (one WARNING per new judgement)."""
        if not pin:
            self._held.pop(server, None)
            return list(skills)
        self.keeper.reload()
        pinned = self.pins.get(server)
        first_sight = pinned is None
        admitted: list[Skill] = []
        held: dict[str, Held] = {}
        taken: dict[str, Pin] = {}
        for skill in skills:
            verdict = self._judge(server, skill, pinned or {}, first_sight=first_sight)
            if isinstance(verdict, Pin):
                taken[relayed_name(skill)] = verdict
            if verdict is None or isinstance(verdict, Pin):
                admitted.append(skill)
            else:
                held[verdict.tool] = verdict
        if (first_sight and self.keeper.writable) or taken:
            self.pins.setdefault(server, {}).update(taken)
            if self.keeper.save() and taken:
                logger.info("Upstream %r: pinned %d skill(s) in %s", server, len(taken), self.keeper.path)
        before = set(self._held.get(server, {}).values())
        self._held[server] = held
        for entry in held.values():
            if entry not in before:
                self._warn(entry, skills)
        return admitted

    def forget(self, server: str) -> None:
        self._held.pop(server, None)

    def held(self) -> list[Held]:
        """Every held skill, by server then name."""
        return [entry for server in sorted(self._held) for _name, entry in sorted(self._held[server].items())]

    def _judge(self, server: str, skill: Skill, pinned: dict[str, Pin], *, first_sight: bool) -> Held | Pin | None:
        from apcore_mcp.upstream.pins.keeper import CHANGED, NEW, UNPINNABLE, UNPINNED, Held

        name = relayed_name(skill)
        old, now = pinned.get(name), skill_pin(skill)
        if now.sha256.startswith("unpinnable"):
            return Held(server, name, UNPINNABLE, old.sha256 if old else None, None, kind="skill")
        if old is not None:
            return None if old.sha256 == now.sha256 else Held(server, name, CHANGED, old.sha256, now.sha256, "skill")
        if not (first_sight or self.keeper.accept_new):
            return Held(server, name, NEW, None, now.sha256, kind="skill")
        if not self.keeper.writable:
            return Held(server, name, UNPINNED, None, now.sha256, kind="skill")
        return now

    def _warn(self, entry: Held, skills: Sequence[Skill]) -> None:
        if entry.state == "changed":
            old = self.pins.get(entry.server, {}).get(entry.tool)
            now = next(skill_pin(s) for s in skills if relayed_name(s) == entry.tool)
            files = ", ".join(changed_files(old.definition if old else None, now.definition)) or "-"
            logger.warning(
                "Upstream %r: skill %r drifted from its pin (pinned %s, now %s; files changed: %s): not served "
                "until approved (apcore-mcp pins diff / pins approve)",
                entry.server,
                entry.tool,
                entry.pinned,
                entry.current,
                files,
            )
        else:
            logger.warning(
                "Upstream %r: skill %r is held (%s, now %s): not served until approved (apcore-mcp pins approve%s)",
                entry.server,
                entry.tool,
                entry.state,
                entry.current,
                ", or pins_accept_new" if entry.state == "new" else "",
            )
