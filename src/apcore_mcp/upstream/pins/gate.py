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
from apcore_mcp.upstream.pins.store import Pin, Pins, read_pins, write_pins
from apcore_mcp.upstream.toolsets import UpstreamRuntime

EXIT_MATCH, EXIT_DRIFT, EXIT_UNREACHABLE = 0, 1, 2


@dataclass
class Live:
    """What the servers list now: per server, per tool, the pin it would take; and who could not be asked."""

    pins: Pins = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    unpinned: list[str] = field(default_factory=list)
    """Servers whose entry says ``"pin": false``: neither diffed nor approved."""


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
                    live.pins[name] = {tool.name: _pin(tool) for tool in await source.listed_tools()}
        finally:
            await runtime.close()
    return live


def _pin(tool: Any) -> Pin:
    current = definition(tool)
    try:
        return Pin(digest(current), current)
    except UnpinnableTool as exc:
        return Pin(f"unpinnable: {exc}", current)


def diff_report(pinned: Pins, live: Live) -> tuple[str, int]:
    """The readable report and the exit status (``EXIT_MATCH`` only when every tool matches its pin)."""
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
                lines.extend(_unified(server, name, None, now))
                status = max(status, EXIT_DRIFT)
            elif was.sha256 != now.sha256:
                lines.append(f"{server}.{name}: drifted (pinned {_short(was)}, now {_short(now)})")
                lines.extend(_unified(server, name, was, now))
                status = max(status, EXIT_DRIFT)
    if status == EXIT_MATCH:
        lines.append("every upstream tool matches its pin")
    return "\n".join(lines) + "\n", status


def _short(pin: Pin | None) -> str:
    return pin.sha256[:12] if pin is not None else "-"


def _unified(server: str, name: str, was: Pin | None, now: Pin) -> list[str]:
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
    """Accept the current definitions into the pins file: every tool (removed ones dropped), or only
    ``tools`` (each ``server.tool``). The approved names.

    Raises:
        UnknownTool: a name in ``tools`` is not a listed tool of a reached server.
        PinsFileError: the pins file exists and is unusable.
    """
    pins = read_pins(path)
    current = {
        f"{server}.{name}": (server, name, pin) for server, listed in live.pins.items() for name, pin in listed.items()
    }
    unknown = [tool for tool in tools if tool not in current]
    if unknown:
        raise UnknownTool(f"not a tool of a reached server: {', '.join(unknown)}")
    if tools:
        for tool in tools:
            server, name, pin = current[tool]
            pins.setdefault(server, {})[name] = pin
        approved = list(tools)
    else:
        pins.update(live.pins)  # servers not reached keep their pins
        approved = sorted(current)
    write_pins(path, pins)
    return approved
