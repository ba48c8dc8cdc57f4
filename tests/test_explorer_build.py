"""The served explorer page is the build of its sources (``scripts/build_explorer.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _builder():  # type: ignore[no-untyped-def]
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
