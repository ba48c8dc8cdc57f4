"""Skills written from the registry: one per module group, its SKILL.md from the modules' metadata.

A group is the modules sharing an id's first segment (``group_by="prefix"``) or a tag
(``group_by="tag"``: a module with several tags is in each of their skills, one with none in
no skill). The text says what the modules themselves say (descriptions, documentation, the
required and enumerated arguments, behaviour annotations, examples) and nothing else: no
timestamps, everything sorted, so the same registry gives the same bytes and digests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.skills.frontmatter import MAX_DESCRIPTION, render_frontmatter, skill_name
from apcore_mcp.tools.skills.model import GENERATED, Skill, make_skill

GroupBy = Literal["prefix", "tag"]
_MAX_EXAMPLE_CHARS = 2_000
"""An example's JSON longer than this is left out: a skill is read by a model, not archived."""


def generate_skills(
    records: Iterable[ToolRecord],
    *,
    group_by: GroupBy = "prefix",
    runs_long: Callable[[ToolRecord], bool] = lambda _record: False,
    note: str = "",
) -> list[Skill]:
    """One generated ``Skill`` per group of ``records`` (tools only), in name order.

    ``runs_long`` says which tools are long-running (started as tasks); it is a parameter
    because the tasks room, not this one, owns that rule. ``note`` is a paragraph put under
    each skill's title (how the tools are reached, in search mode).
    """
    groups: dict[str, tuple[str, list[ToolRecord]]] = {}
    for record in sorted(records, key=lambda r: r.name):
        for key in _group_keys(record, group_by):
            name = skill_name(key)
            if name is not None:
                groups.setdefault(name, (key, []))[1].append(record)
    return [_skill(name, key, members, runs_long, note) for name, (key, members) in sorted(groups.items())]


def _group_keys(record: ToolRecord, group_by: GroupBy) -> tuple[str, ...]:
    if group_by == "tag":
        return tuple(sorted(set(record.tags)))
    return (record.name.split(".", 1)[0],)


def _skill(name: str, key: str, members: list[ToolRecord], runs_long: Callable[[ToolRecord], bool], note: str) -> Skill:
    tools = ", ".join(r.name for r in members)
    description = f"How to use the {key} tools ({tools}): which to call when, their arguments and their risks."
    if len(description) > MAX_DESCRIPTION:
        description = f"How to use the {len(members)} {key} tools: which to call when, their arguments and risks."
    frontmatter = {"name": name, "description": description}
    text = render_frontmatter(frontmatter) + _body(key, members, runs_long, note)
    return make_skill(
        name, description, text, tools=[r.name for r in members], origin=GENERATED, frontmatter=frontmatter
    )


def _body(key: str, members: list[ToolRecord], runs_long: Callable[[ToolRecord], bool], note: str) -> str:
    lines = [f"\n# {key}\n", *([note + "\n"] if note else []), "## When to use which tool\n"]
    lines += [f"- `{r.name}`: {_first_line(r.description) or 'no description given.'}" for r in members]
    cautions = _cautions(members, runs_long)
    if cautions:
        lines += ["", "## Before you call\n", *cautions]
    for record in members:
        lines += ["", *_tool_section(record, runs_long)]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


def _cautions(members: list[ToolRecord], runs_long: Callable[[ToolRecord], bool]) -> list[str]:
    out: list[str] = []
    for label, test in (
        ("need a person's approval before they run", lambda r: r.requires_approval),
        ("are destructive: confirm with the user first", lambda r: r.hints.get("destructiveHint", False)),
        ("run long: start them as tasks where the client can", runs_long),
    ):
        names = [f"`{r.name}`" for r in members if test(r)]
        if names:
            out.append(f"- These {label}: {', '.join(names)}.")
    return out


def _tool_section(record: ToolRecord, runs_long: Callable[[ToolRecord], bool]) -> list[str]:
    lines = [f"## `{record.name}`\n"]
    if record.description:
        lines.append(record.description.strip() + "\n")
    if record.documentation:
        lines.append(record.documentation.strip() + "\n")
    traits = _traits(record, runs_long)
    if traits:
        lines.append(f"Behaviour: {', '.join(traits)}.\n")
    arguments = _arguments(record.input_schema)
    if arguments:
        lines += ["Arguments:\n", *arguments, ""]
    examples = _examples(record.examples)
    if examples:
        lines += ["Examples:\n", *examples]
    return lines


def _traits(record: ToolRecord, runs_long: Callable[[ToolRecord], bool]) -> list[str]:
    traits = []
    if record.hints.get("readOnlyHint"):
        traits.append("read-only")
    if record.hints.get("destructiveHint"):
        traits.append("destructive")
    if record.requires_approval:
        traits.append("needs approval")
    if runs_long(record):
        traits.append("long-running (task)")
    if record.streaming:
        traits.append("streams partial results")
    return traits


def _arguments(schema: Mapping[str, Any]) -> list[str]:
    """The required arguments and those with a fixed set of values, each on a line."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set(schema.get("required") or ())
    lines = []
    for name in sorted(properties):
        prop = properties[name] if isinstance(properties[name], Mapping) else {}
        enum = prop.get("enum")
        if name not in required and not isinstance(enum, list):
            continue
        kind = prop.get("type")
        parts = ["required" if name in required else "optional", *([str(kind)] if isinstance(kind, str) else [])]
        line = f"- `{name}` ({', '.join(parts)})"
        if isinstance(prop.get("description"), str):
            line += f": {_first_line(prop['description'])}"
        if isinstance(enum, list):
            line += f" One of: {', '.join(f'`{json.dumps(v)}`' for v in enum)}."
        lines.append(line)
    return lines


def _examples(examples: tuple[Any, ...]) -> list[str]:
    lines = []
    for example in examples:
        shown = {key: getattr(example, key, None) for key in ("title", "description", "inputs", "output")}
        try:
            text = json.dumps({k: v for k, v in shown.items() if v is not None}, indent=2, sort_keys=True)
        except (TypeError, ValueError):
            continue  # not JSON: left out rather than shown wrong
        if len(text) <= _MAX_EXAMPLE_CHARS:
            lines += ["```json", text, "```", ""]
    return lines


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""
