"""The threat model page names tests as evidence: each named test must exist, and each guarantee cite one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "threat-model.md"
CITED = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    return {node.name for node in tree.body if isinstance(node, kinds) and node.name.startswith("test_")}


def test_every_test_the_threat_model_cites_exists() -> None:
    cited = CITED.findall(PAGE.read_text())
    assert len(cited) >= 40
    missing = [f"{path}::{name}" for path, name in cited if name not in defined_tests(ROOT / path)]
    assert missing == []


def test_every_guarantee_row_cites_a_test() -> None:
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    guarantees = [row for row in rows if not row.startswith("| guarantee |")]
    assert guarantees and all(CITED.search(row) for row in guarantees)
