"""``python -m bench --show`` without results says so in one line and fails; a broken file likewise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def show(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", "--show", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_show_without_results_says_so_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "results" / "latest.json"
    run = show(missing)
    assert run.returncode != 0 and run.stdout == ""
    assert run.stderr.strip() == f"no results at {missing}: run python -m bench first (or --output to write them there)"


@pytest.mark.parametrize("content", ["{", '{"rows": []}', "[]"])
def test_show_of_a_file_that_is_no_report_says_so_in_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "latest.json"
    path.write_text(content)
    run = show(path)
    assert run.returncode != 0 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and str(path) in run.stderr and "Traceback" not in run.stderr
