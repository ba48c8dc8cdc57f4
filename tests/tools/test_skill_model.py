"""The skill model: digests and sizes are the bytes', order is deterministic."""

from __future__ import annotations

import hashlib

from apcore_mcp.tools.skills.model import SKILL_FILE, SkillSet, make_skill, upstream_origin


def test_files_carry_the_sha256_and_size_of_their_bytes() -> None:
    skill = make_skill("a", "A", "---\nname: a\ndescription: A\n---\nbody\n", other_files={"z.md": b"zz", "b.md": b"b"})
    assert list(skill.files) == [SKILL_FILE, "b.md", "z.md"]
    for f in skill.files.values():
        assert f.sha256 == hashlib.sha256(f.data).hexdigest()
        assert f.size == len(f.data)
    assert skill.skill_md.startswith("---\nname: a\n")
    assert dict(skill.frontmatter) == {"name": "a", "description": "A"}
    assert skill.size == sum(len(f.data) for f in skill.files.values())


def test_a_set_is_in_name_order_and_later_skills_win() -> None:
    first = make_skill("b", "first", "x", frontmatter={})
    second = make_skill("b", "second", "y", frontmatter={}, origin=upstream_origin("srv"))
    s = SkillSet.of([make_skill("c", "C", "c", frontmatter={}), first, make_skill("a", "A", "a", frontmatter={})])
    assert [k.name for k in s] == ["a", "b", "c"]
    merged = s.merged([second])
    assert merged.generation == s.generation + 1
    got = merged.get("b")
    assert got is not None and got.description == "second" and got.origin == "upstream:srv"
