"""Hostile seams of skills: the skills/ directory cannot lead out or grow without bound;
a skill is hidden from whoever may not see one of its tools, on every route."""

from __future__ import annotations

from pathlib import Path

from apcore_mcp.tools.skills.directory import load_skills_dir

from tests._support.skills import write_skill


def test_a_symlinked_file_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=hunter2")
    root = tmp_path / "skills"
    folder = write_skill(root, "leaky")
    (folder / "notes.md").symlink_to(secret)
    skills, problems = load_skills_dir(root)
    assert skills == []
    assert problems[0].file == str(folder / "notes.md") and "symlink" in problems[0].reason


def test_a_symlinked_folder_and_skill_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "elsewhere")
    root = tmp_path / "skills"
    folder = write_skill(root, "linker")
    (folder / "refs").symlink_to(outside / "elsewhere")
    (root / "elsewhere").symlink_to(outside / "elsewhere")
    skills, problems = load_skills_dir(root)
    assert skills == []
    assert sorted(Path(p.file or "").relative_to(root).as_posix() for p in problems) == ["elsewhere", "linker/refs"]
    assert all("symlink" in p.reason for p in problems)


def test_a_dot_dot_name_cannot_name_a_skill(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "ok")
    # No folder entry can be ".." and names must be skill names: a frontmatter name cannot redirect.
    (root / "ok" / "SKILL.md").write_text("---\nname: ../ok\ndescription: d\n---\n")
    skills, problems = load_skills_dir(root)
    assert skills == [] and "must equal the folder name" in problems[0].reason


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "big")
    (folder / "huge.bin").write_bytes(b"x" * 2049)
    skills, problems = load_skills_dir(tmp_path, max_file_bytes=2048)
    assert skills == []
    assert problems[0].file == str(folder / "huge.bin") and "over the 2048-byte limit" in problems[0].reason


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "many")
    for i in range(3):
        (folder / f"f{i}.md").write_text(str(i))
    skills, problems = load_skills_dir(tmp_path, max_files=3)
    assert skills == [] and "more than 3 files" in problems[0].reason
