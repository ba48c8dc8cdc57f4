"""The served explorer page is the build of its sources (``scripts/build_explorer.py``)."""

from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_explorer", ROOT / "scripts" / "build_explorer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_the_build_of_its_sources() -> None:
    built = _builder().build()
    assert (ROOT / "static" / "explorer.html").read_text("utf-8") == built, (
        "static/explorer.html is not current: run python scripts/build_explorer.py"
    )


def test_the_build_takes_every_source_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "styles").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "page.html").write_text(
        "<!doctype html>\n<style>\n/* @styles */\n</style><script>\n/* @scripts */\n</script>\n"
    )
    (tmp_path / "styles" / "20-b.css").write_text("b {}\n")
    (tmp_path / "styles" / "10-a.css").write_text("a {}\n")
    (tmp_path / "scripts" / "20-second.js").write_text("second();\n")
    (tmp_path / "scripts" / "10-first.js").write_text("first();\n")
    page = _builder().build(tmp_path)
    assert "a {}\nb {}\n" in page
    assert '"use strict";\n(function () {\nfirst();\nsecond();\n})();\n' in page
    assert page.splitlines()[1].startswith("<!-- Built from static/explorer/")


def test_the_documented_build_command_writes_the_page(tmp_path: Path) -> None:
    """docs/explorer.md's build command, run as written in a copy of the sources, writes the committed page."""
    block = next(
        line.strip()
        for line in (ROOT / "docs" / "explorer.md").read_text().splitlines()
        if line.strip().endswith("scripts/build_explorer.py")
    )
    python, script = shlex.split(block)
    assert python == ".venv/bin/python"
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / script, tmp_path / script)
    shutil.copytree(ROOT / "static" / "explorer", tmp_path / "static" / "explorer")
    subprocess.run([sys.executable, script], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "static" / "explorer.html").read_text("utf-8") == (ROOT / "static" / "explorer.html").read_text(
        "utf-8"
    )
