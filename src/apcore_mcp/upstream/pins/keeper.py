"""``PinKeeper``: which of an upstream's listed tools are served, judged against the pins file.

A tool matching its pin is served. A tool whose definition changed ("drift") is held: not
registered at all, so no route (lists, search, toolsets, tasks, the OpenAI export, a call)
can reach it, and the rest of its server keeps working. The first time a server is seen its
tools are pinned (the file written) when the keeper may write; a tool new to a pinned server
is held unless ``accept_new``. A keeper that may not write (``workers`` > 1, a read-only file)
holds every unpinned tool instead, and says so: pins are then taken with ``pins approve``.

The file is read again whenever its modification stamp changed, at each judgement, so
every worker and replica follows an approval made elsewhere.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mcp.types as types

from apcore_mcp.upstream.pins.canonical import UnpinnableTool, definition, digest
from apcore_mcp.upstream.pins.skills import SkillPins
from apcore_mcp.upstream.pins.store import Pin, Pins, PinsFileError, read_pins, read_skill_pins, write_pins

logger = logging.getLogger(__name__)

CHANGED, NEW, UNPINNED, UNPINNABLE = "changed", "new", "unpinned", "unpinnable"


@dataclass(frozen=True)
class Held:
    """A listed tool not served, and why: ``state`` is ``changed`` (drift from its pin), ``new`` (a
    pinned server's new tool), ``unpinned`` (first sight, and the keeper may not write) or
    ``unpinnable`` (JCS refuses its definition)."""

    server: str
    tool: str
    state: str
    pinned: str | None
    current: str | None
    kind: str = "tool"
    """``tool``, or ``skill`` for a relayed skill held the same way (``tool`` is then the skill's name)."""


def warn_unpinned(pins: PinKeeper | None, server: str, *, pin: bool) -> None:
    """Pinning is on and this entry of ``mcp.json`` turns it off: say so at each mount."""
    if pins is not None and not pin:
        logger.warning(
            'Upstream %r: "pin": false, its tools are served as listed (a changed description or schema '
            "is not noticed)",
            server,
        )


def can_write(path: Path) -> bool:
    """Whether ``path`` may be replaced: the directory must take a new file, an existing file be writable."""
    if path.exists() and not os.access(path, os.W_OK):
        return False
    return os.access(path.parent, os.W_OK)


class PinKeeper:
    """The pins of one serving process (see the module doc).

    Raises (at construction):
        PinsFileError: the pins file exists and is unusable.
    """

    def __init__(self, path: Path, *, writable: bool, accept_new: bool = False) -> None:
        self.path = path
        self.writable = writable and can_write(path)
        self.accept_new = accept_new
        self._pins: Pins = read_pins(path)
        self._stamp = _stamp(path)
        self._held: dict[str, dict[str, Held]] = {}
        self.skill_pins = SkillPins(self, read_skill_pins(path))
        """The relayed skills' pins, judged beside the tools (``pins/skills``)."""

    def changed(self) -> bool:
        """Whether the file changed since it was last read."""
        return _stamp(self.path) != self._stamp

    def admit(self, server: str, tools: Sequence[types.Tool], *, pin: bool = True) -> list[types.Tool]:
        """The tools of ``server`` to serve; the others are held (and logged once per new judgement)."""
        if not pin:
            self._held.pop(server, None)
            return list(tools)
        self._reload_if_changed()
        pinned = self._pins.get(server)
        first_sight = pinned is None
        admitted: list[types.Tool] = []
        held: dict[str, Held] = {}
        taken: dict[str, Pin] = {}
        for tool in tools:
            verdict = self._judge(server, tool, pinned or {}, first_sight=first_sight)
            if isinstance(verdict, Held):
                held[tool.name] = verdict
            else:
                admitted.append(tool)
                if verdict is not None:
                    taken[tool.name] = verdict
        if (first_sight and self.writable) or taken:
            self._take(server, taken)
        before = set(self._held.get(server, {}).values())
        self._held[server] = held
        for entry in held.values():
            if entry not in before:  # one WARNING per judgement, not one per listing
                shown = (entry.pinned, entry.current) if entry.state == CHANGED else (entry.current,)
                logger.warning(_WARNINGS[entry.state], entry.server, entry.tool, *shown)
        return admitted

    def forget(self, server: str) -> None:
        """``server`` is no longer mounted: nothing of it is held."""
        self._held.pop(server, None)
        self.skill_pins.forget(server)

    def held(self) -> list[Held]:
        """Every held tool, by server then tool name, then every held relayed skill."""
        tools = [entry for server in sorted(self._held) for _name, entry in sorted(self._held[server].items())]
        return tools + self.skill_pins.held()

    def _judge(self, server: str, tool: types.Tool, pinned: dict[str, Pin], *, first_sight: bool) -> Held | Pin | None:
        """``None``: matches its pin; a ``Pin``: to be taken now; a ``Held``: not served."""
        old = pinned.get(tool.name)
        current = definition(tool)
        try:
            sha = digest(current)
        except UnpinnableTool:
            return Held(server, tool.name, UNPINNABLE, old.sha256 if old else None, None)
        if old is not None:
            return None if old.sha256 == sha else Held(server, tool.name, CHANGED, old.sha256, sha)
        if not (first_sight or self.accept_new):
            return Held(server, tool.name, NEW, None, sha)
        if not self.writable:
            return Held(server, tool.name, UNPINNED, None, sha)
        return Pin(sha, current)

    def reload(self) -> None:
        """Read the file again if it changed since it was last read (before a judgement)."""
        self._reload_if_changed()

    def save(self) -> bool:
        """Write the tools' and skills' pins in force; ``False`` (logged) when the file could not be written."""
        try:
            write_pins(self.path, self._pins, self.skill_pins.pins)
        except OSError as exc:
            logger.error("Pins file %s not written (%s): the new pins hold for this process only", self.path, exc)
            return False
        self._stamp = _stamp(self.path)
        return True

    def _take(self, server: str, taken: dict[str, Pin]) -> None:
        self._pins.setdefault(server, {}).update(taken)
        try:
            write_pins(self.path, self._pins, self.skill_pins.pins)
        except OSError as exc:
            logger.error("Pins file %s not written (%s): the new pins hold for this process only", self.path, exc)
            return
        self._stamp = _stamp(self.path)
        if taken:
            logger.info("Upstream %r: pinned %d tool(s) in %s", server, len(taken), self.path)

    def _reload_if_changed(self) -> None:
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return
        try:
            self._pins = read_pins(self.path)
            self.skill_pins.pins = read_skill_pins(self.path)
        except PinsFileError as exc:
            logger.error("Pins file not reloaded, the pins in force stay: %s", exc)
            return
        self._stamp = stamp
        logger.info("Pins file %s reloaded", self.path)


_WARNINGS = {
    CHANGED: "Upstream %r: tool %r drifted from its pin (pinned %s, now %s): not served until approved "
    "(apcore-mcp pins diff / pins approve)",
    NEW: "Upstream %r: new tool %r is not pinned (now %s): not served until approved "
    "(apcore-mcp pins approve, or pins_accept_new)",
    UNPINNED: "Upstream %r: tool %r has no pin and the pins file is read-only here (now %s): not served "
    "until approved (apcore-mcp pins approve)",
    UNPINNABLE: "Upstream %r: tool %r cannot be pinned (%s): its definition has a number "
    "RFC 8785 cannot represent; not served",
}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
