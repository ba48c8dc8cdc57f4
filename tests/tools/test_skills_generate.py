"""Skills generated from a registry: one per group, SKILL.md from the modules' own metadata."""

from __future__ import annotations

from typing import Literal

from apcore import ModuleAnnotations, ModuleExample, Registry
from pydantic import BaseModel, Field

from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.skills.frontmatter import parse_frontmatter
from apcore_mcp.tools.skills.generate import generate_skills

from tests._support.modules import module_of


class ReadIn(BaseModel):
    path: str = Field(description="File to read\nsecond line not shown")
    mode: Literal["text", "bytes"] = "text"
    limit: int = 10


def read(path: str, mode: str = "text", limit: int = 10) -> dict[str, str]:
    """Read a file."""
    return {"path": path}


def delete(path: str) -> dict[str, str]:
    """Delete a file."""
    return {"path": path}


def ping() -> dict[str, str]:
    """Answer pong."""
    return {}


def records() -> tuple[ToolRecord, ...]:
    registry = Registry()
    reader = module_of(read, input=ReadIn, tags=["fs", "io"], documentation="Reads whole files.")
    reader.examples = [ModuleExample(title="A text file", inputs={"path": "a.txt"}, output={"path": "a.txt"})]
    registry.register("files.read", reader)
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)
    registry.register("files.delete", module_of(delete, tags=["fs"], annotations=annotations))
    registry.register("net__tools.ping", module_of(ping))
    catalog = ToolCatalog(registry)
    catalog.load()
    return catalog.records()


def test_one_skill_per_prefix_written_from_the_modules() -> None:
    skills = generate_skills(records(), runs_long=lambda r: r.name == "files.read")
    assert [s.name for s in skills] == ["files", "net-tools"]
    files = skills[0]
    assert files.tools == ("files.delete", "files.read")
    text = files.skill_md
    assert parse_frontmatter(text) == dict(files.frontmatter)
    assert files.frontmatter["name"] == "files"
    assert "- `files.read`: Read a file." in text
    assert "Reads whole files." in text
    assert "- These need a person's approval before they run: `files.delete`." in text
    assert "- These are destructive: confirm with the user first: `files.delete`." in text
    assert "- These run long: start them as tasks where the client can: `files.read`." in text
    assert "- `path` (required, string): File to read\n" in text
    assert '- `mode` (optional, string) One of: `"text"`, `"bytes"`.' in text
    assert "`limit`" not in text  # neither required nor enumerated: not an argument that matters
    assert '"inputs": {\n    "path": "a.txt"\n  }' in text


def test_tags_group_a_module_into_each_of_its_tags() -> None:
    skills = generate_skills(records(), group_by="tag")
    assert {s.name: s.tools for s in skills} == {"fs": ("files.delete", "files.read"), "io": ("files.read",)}


def test_the_same_registry_gives_the_same_bytes() -> None:
    first = {s.name: {p: f.sha256 for p, f in s.files.items()} for s in generate_skills(records())}
    second = {s.name: {p: f.sha256 for p, f in s.files.items()} for s in generate_skills(reversed(records()))}
    assert first == second
