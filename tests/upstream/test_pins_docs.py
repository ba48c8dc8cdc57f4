"""The pins commands of docs/upstreams.md, run as written against a real stdio upstream named as the
page names it (``github`` with a ``search_issues`` tool, tests/upstreams/drifting_server.py), and the
drift the page shows: the gate passes, fails on the drift with the diff the page shows, passes again
after the one tool is approved."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from apcore_mcp.run.pins import pins_main

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "upstreams.md"
MARK = "<!-- run by: tests/upstream/test_pins_docs.py -->"
DRIFTING = REPO / "tests" / "upstreams" / "drifting_server.py"


def commands() -> list[list[str]]:
    found = re.findall(rf"{re.escape(MARK)}\n```bash\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(found) == 1, f"expected one marked bash block in {PAGE.name}, found {len(found)}"
    return [shlex.split(line) for line in str(found[0]).splitlines() if line.strip()]


def shown_drift() -> tuple[str, str]:
    """The description lines the page's sample output removes and adds."""
    sample = PAGE.read_text().split("<!-- not run: the output of pins diff", 1)[1]
    removed = re.search(r"^-  (.+)$", sample, re.MULTILINE)
    added = re.search(r"^\+  (.+)$", sample, re.MULTILINE)
    assert removed is not None and added is not None
    return removed.group(1), added.group(1)


def test_the_pages_pins_commands_gate_a_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    approve_all, diff, approve_one = commands()
    assert [argv[:2] for argv in (approve_all, diff, approve_one)] == [["apcore-mcp", "pins"]] * 3
    before, after = shown_drift()
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"search_issues": before, "list_repos": "List the repositories"}))
    args = [str(DRIFTING), str(tools), str(tmp_path / "calls.txt")]
    (tmp_path / "mcp.json").write_text(
        json.dumps({"mcpServers": {"github": {"command": sys.executable, "args": args}}})
    )
    monkeypatch.chdir(tmp_path)  # the commands name mcp.json relative to where they run
    assert pins_main(approve_all[2:]) == 0
    assert (tmp_path / "mcp.pins.json").exists()
    installed = [str(Path(sys.executable).parent / diff[0]), *diff[1:]]  # the console script, once
    passed = subprocess.run(installed, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    tools.write_text(json.dumps({"search_issues": after, "list_repos": "List the repositories"}))
    capsys.readouterr()
    assert pins_main(diff[2:]) == 1
    report = capsys.readouterr().out
    assert report.startswith("github.search_issues: drifted (pinned ")
    assert f"-  {before}\n+  {after}\n" in report and "list_repos" not in report
    assert pins_main(approve_one[2:]) == 0
    assert pins_main(diff[2:]) == 0
