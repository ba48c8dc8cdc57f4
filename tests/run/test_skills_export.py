"""``apcore-mcp skills export DIR``: the skills written as files, byte for byte what is served."""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from pathlib import Path

import pytest

from apcore_mcp.run.skills import ExportError, export_skill, skills_main
from apcore_mcp.tools.skills.model import make_skill

from tests._support.doc_blocks import BIN, DOCS, REPO, blocks_of
from tests._support.skills import write_skill

EXTENSIONS = REPO / "examples" / "extensions"


def test_the_command_writes_every_skill_with_the_listed_bytes(tmp_path: Path) -> None:
    """docs/skills.md's command as written, from a folder where ``examples`` is the repository's."""
    [block] = [b for b in blocks_of(DOCS / "skills.md") if b.lang == "bash"]
    (tmp_path / "examples").symlink_to(REPO / "examples")
    write_skill(tmp_path / "skills", "geo", body="Hand-written geo.\n")
    command = shlex.split(block.body.strip())
    assert command[0] == "apcore-mcp"
    command = [str(BIN / "apcore-mcp"), *command[1:], "--skills-dir", "skills"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "exported-skills"
    folders = sorted(p.name for p in out.iterdir())
    assert "geo" in folders and "text" in folders
    assert (out / "geo" / "SKILL.md").read_text().endswith("Hand-written geo.\n")
    assert "wrote exported-skills/text" in done.stdout
    text = (out / "text" / "SKILL.md").read_bytes()
    assert text.startswith(b"---\nname: text\n")
    # The same registry, the same bytes: a second export writes identical files.
    again = tmp_path / "again"
    assert skills_main(["export", str(again), "--extensions-dir", str(EXTENSIONS)], {}) == 0
    assert hashlib.sha256((again / "text" / "SKILL.md").read_bytes()).digest() == hashlib.sha256(text).digest()


def test_usage_errors_are_told(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert skills_main(["export"], {}) == 1
    assert "usage: apcore-mcp skills export DIR" in capsys.readouterr().err
    assert skills_main(["export", str(tmp_path), "--extensions-dir", str(tmp_path / "nope")], {}) == 1
    assert "extensions directory does not exist" in capsys.readouterr().err


def test_a_file_path_leading_out_of_its_folder_is_not_written(tmp_path: Path) -> None:
    skill = make_skill("evil", "d", "x", frontmatter={}, other_files={"../../escaped.md": b"out"})
    with pytest.raises(ExportError, match="would leave its folder"):
        export_skill(skill, tmp_path / "out")
    assert not (tmp_path / "escaped.md").exists()
    (tmp_path / "out" / "linked").mkdir(parents=True)
    (tmp_path / "out" / "linked" / "SKILL.md").symlink_to(tmp_path / "target.md")
    with pytest.raises(ExportError, match="is a symlink"):
        export_skill(make_skill("linked", "d", "x", frontmatter={}), tmp_path / "out")
    assert not (tmp_path / "target.md").exists()
