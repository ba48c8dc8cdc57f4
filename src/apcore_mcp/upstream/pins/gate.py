"""``apcore-mcp pins diff`` and ``pins approve``: the upstreams' live definitions against the pins file.

Each server of the config is mounted as a serving process mounts it (``UpstreamRuntime``, into
a registry of its own, without pins), its tools listed, and the servers stopped again. ``diff``
says per tool whether it matches, drifted (with a unified diff of its description and schemas),
is new, or was removed; it fails on any drift, any new tool, and any server that could not be
reached (a gate that cannot look must not pass). ``approve`` writes the current definitions.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apcore import Registry

from apcore_mcp.upstream.config.parse import UpstreamConfig
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.mount import served_toolsets
from apcore_mcp.upstream.pins.canonical import PINNED_FIELDS, UnpinnableTool, definition, digest
from apcore_mcp.upstream.pins.skills import changed_files, relayed_name, skill_pin
from apcore_mcp.upstream.pins.store import Pin, Pins, read_pins, read_skill_pins, write_pins, writing
from apcore_mcp.upstream.source import UpstreamSource
from apcore_mcp.upstream.toolsets import UpstreamRuntime

EXIT_MATCH, EXIT_DRIFT, EXIT_UNREACHABLE = 0, 1, 2


@dataclass
class Live:
    """What the servers list now: per server, per tool, the pin it would take; and who could not be asked."""

    pins: Pins = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    unpinned: list[str] = field(default_factory=list)
    """Servers whose entry says ``"pin": false``: neither diffed nor approved."""
    skills: Pins = field(default_factory=dict)
    """Per server offering skills, per relayed skill, the pin it would take (``pins/skills``)."""


async def live_pins(config: UpstreamConfig, *, max_message_bytes: int) -> Live:
    """Mount every server of ``config`` once and take its tools' current pins."""
    live = Live(unpinned=sorted(name for name, spec in config.servers.items() if not spec.pin))
    async with UpstreamPool(redactor=config.redactor, max_message_bytes=max_message_bytes) as pool:
        runtime = UpstreamRuntime(Registry(), pool)
        try:
            switch = await runtime.apply(config, served_toolsets(config, None))
            # A server left out for a missing ${VAR} was not looked at: the gate must not pass over it.
            skipped = {name: reason for name, reason in config.skipped.items() if reason != "disabled"}
            live.failed = {**skipped, **switch.failed}
            for name, source in sorted(runtime.mounted.items()):
                if name not in live.unpinned:
                    live.pins[name] = {tool.name: pin_of(tool) for tool in await source.listed_tools()}
                    skills = await source.listed_skills() if isinstance(source, UpstreamSource) else None
                    if skills is not None:
                        live.skills[name] = {relayed_name(skill): skill_pin(skill) for skill in skills}
        finally:
            await runtime.close()
    return live


def pin_of(tool: Any) -> Pin:
    """The pin of a listed tool's current definition (the gate and the operator's HTTP approval share it)."""
    current = definition(tool)
    try:
        return Pin(digest(current), current)
    except UnpinnableTool as exc:
        return Pin(f"unpinnable: {exc}", current)


def diff_report(pinned: Pins, live: Live, pinned_skills: Pins | None = None) -> tuple[str, int]:
    """The readable report and the exit status (``EXIT_MATCH`` only when every tool and every relayed
    skill matches its pin)."""
    lines: list[str] = []
    status = EXIT_MATCH
    for server, error in sorted(live.failed.items()):
        lines.append(f"{server}: not reached ({error}); its tools are not checked")
        status = EXIT_UNREACHABLE
    for server in live.unpinned:
        lines.append(f'{server}: "pin": false in the config; not checked')
    for server, tools in sorted(live.pins.items()):
        old = pinned.get(server, {})
        for name in sorted(set(tools) | set(old)):
            was, now = old.get(name), tools.get(name)
            if now is None:
                lines.append(f"{server}.{name}: removed (pinned {_short(was)}); `pins approve` drops its pin")
            elif was is None:
                lines.append(f"{server}.{name}: new, not pinned (now {_short(now)})")
                lines.extend(unified_diff(server, name, None, now))
                status = max(status, EXIT_DRIFT)
            elif was.sha256 != now.sha256:
                lines.append(f"{server}.{name}: drifted (pinned {_short(was)}, now {_short(now)})")
                lines.extend(unified_diff(server, name, was, now))
                status = max(status, EXIT_DRIFT)
    skill_lines, skill_status = skills_report(pinned_skills or {}, live.skills)
    lines.extend(skill_lines)
    status = max(status, skill_status)
    if status == EXIT_MATCH:
        lines.append("every upstream tool matches its pin")
    return "\n".join(lines) + "\n", status


def _short(pin: Pin | None) -> str:
    return pin.sha256[:12] if pin is not None else "-"


def unified_diff(server: str, name: str, was: Pin | None, now: Pin) -> list[str]:
    """A readable unified diff of a tool's pinned and current definitions (``None``: a new tool)."""
    before = _readable(was.definition) if was is not None else []
    after = _readable(now.definition)
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(
            before, after, f"pinned {server}.{name}", f"current {server}.{name}", n=3, lineterm=""
        )
    ]


def _readable(pinned: dict[str, Any]) -> list[str]:
    """A definition as lines a reviewer reads: the description as text, the schemas as indented JSON."""
    lines: list[str] = []
    for key in PINNED_FIELDS:
        if key not in pinned:
            continue
        value = pinned[key]
        if key == "description" and isinstance(value, str):
            lines += ["description:", *(f"  {line}" for line in value.splitlines() or [""])]
        else:
            lines += [f"{key}:", *(f"  {line}" for line in json.dumps(value, indent=2, sort_keys=True).splitlines())]
    return lines


class UnknownTool(ValueError):
    """``pins approve`` was named a tool no reached server lists."""


def approve(path: Path, live: Live, tools: Sequence[str] = ()) -> list[str]:
    """Accept the current definitions into the pins file: every tool and relayed skill (removed ones
    dropped), or only ``tools`` (each ``server.tool``, or ``server/skill`` for a skill). The approved names.

    Raises:
        UnknownTool: a name in ``tools`` is not a listed tool or skill of a reached server.
        PinsFileError: the pins file exists and is unusable.
    """
    with writing(path):  # several processes may approve at once: none drops another's entries
        pins, skill_pins = read_pins(path), read_skill_pins(path)
        current = {
            f"{server}.{name}": (server, name, pin)
            for server, listed in live.pins.items()
            for name, pin in listed.items()
        }
        skills = {
            f"{server}/{name}": (server, name, pin)
            for server, listed in live.skills.items()
            for name, pin in listed.items()
        }
        unknown = [tool for tool in tools if tool not in current and tool not in skills]
        if unknown:
            raise UnknownTool(f"not a tool of a reached server: {', '.join(unknown)}")
        if tools:
            for tool in tools:
                server, name, pin = current[tool] if tool in current else skills[tool]
                (pins if tool in current else skill_pins).setdefault(server, {})[name] = pin
            approved = list(tools)
        else:
            pins.update(live.pins)  # servers not reached keep their pins
            skill_pins.update(live.skills)
            approved = sorted(current) + sorted(skills)
        write_pins(path, pins, skill_pins)
    return approved


def skills_report(pinned: Pins, live: Pins) -> tuple[list[str], int]:
    """The relayed skills' lines of ``pins diff`` (a drift names the files that changed) and their status."""
    lines: list[str] = []
    status = EXIT_MATCH
    for server, skills in sorted(live.items()):
        old = pinned.get(server, {})
        for name in sorted(set(skills) | set(old)):
            was, now = old.get(name), skills.get(name)
            label = f"{server}/{name}"
            if now is None:
                lines.append(f"skill {label}: removed (pinned {_short(was)}); `pins approve` drops its pin")
            elif was is None:
                lines.append(f"skill {label}: new, not pinned (now {_short(now)}); files: {_files(None, now)}")
                status = EXIT_DRIFT
            elif was.sha256 != now.sha256:
                changed = _files(was, now)
                lines.append(
                    f"skill {label}: drifted (pinned {_short(was)}, now {_short(now)}); files changed: {changed}"
                )
                status = EXIT_DRIFT
    return lines, status


def _files(was: Pin | None, now: Pin) -> str:
    return ", ".join(changed_files(was.definition if was else None, now.definition)) or "-"
