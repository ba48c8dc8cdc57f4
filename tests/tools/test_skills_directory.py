"""Hand-written skills from a skills/ directory, and how they combine with generated ones."""

from __future__ import annotations

from pathlib import Path

from apcore_mcp.tools.skills.directory import load_skills_dir, with_hand_written
from apcore_mcp.tools.skills.model import make_skill

from tests._support.doc_blocks import DOCS, blocks_of
from tests._support.skills import write_skill


def test_a_folder_with_its_files_is_one_skill(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "pdf-forms", extra="allowed-tools: pdf.fill pdf.read\n")
    (folder / "references").mkdir()
    (folder / "references" / "FORMS.md").write_bytes(b"forms")
    skills, problems = load_skills_dir(tmp_path)
    assert problems == []
    [skill] = skills
    assert (skill.name, skill.origin, skill.description) == ("pdf-forms", "directory", "Hand-written pdf-forms")
    assert list(skill.files) == ["SKILL.md", "references/FORMS.md"]
    assert skill.files["references/FORMS.md"].data == b"forms"
    assert skill.tools == ("pdf.fill", "pdf.read")
    assert skill.skill_md == (folder / "SKILL.md").read_text()


def test_a_hand_written_skill_wins_and_keeps_the_generated_ones_tools(tmp_path: Path) -> None:
    write_skill(tmp_path, "files")
    generated = [make_skill("files", "gen", "x", frontmatter={}, tools=["files.read"])]
    written, _ = load_skills_dir(tmp_path)
    [combined] = with_hand_written(generated, written)
    assert combined.origin == "directory" and combined.tools == ("files.read",)


def test_a_bad_folder_is_a_problem_and_the_others_are_served(tmp_path: Path) -> None:
    write_skill(tmp_path, "good")
    (tmp_path / "Bad_Name").mkdir()
    (tmp_path / "no-skill-md").mkdir()
    write_skill(tmp_path, "misnamed").joinpath("SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    write_skill(tmp_path, "no-front").joinpath("SKILL.md").write_text("no frontmatter\n")
    skills, problems = load_skills_dir(tmp_path)
    assert [s.name for s in skills] == ["good"]
    reasons = {Path(p.file or "").relative_to(tmp_path).as_posix(): p.reason for p in problems}
    assert "not a skill name" in reasons["Bad_Name"]
    assert "no SKILL.md" in reasons["no-skill-md"]
    assert "must equal the folder name" in reasons["misnamed/SKILL.md"]
    assert "frontmatter" in reasons["no-front/SKILL.md"]


def test_a_missing_directory_is_a_problem(tmp_path: Path) -> None:
    skills, problems = load_skills_dir(tmp_path / "absent")
    assert skills == [] and "is not a directory" in problems[0].reason


def test_the_docs_hand_written_skill_is_served_as_written(tmp_path: Path) -> None:
    """docs/skills.md's example SKILL.md, loaded from a skills folder."""
    [block] = [b for b in blocks_of(DOCS / "skills.md") if b.lang == "markdown"]
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "SKILL.md").write_text(block.body)
    [skill], problems = load_skills_dir(tmp_path)
    assert problems == []
    assert skill.tools == ("files.list", "files.purge", "files.read")
    assert skill.skill_md == block.body
