"""Print pytest's counts as the run's last line, ``tests: N passed, N failed[, N skipped]``.

The coverage report follows pytest's own summary in ``scripts/test.sh``; this repeats the counts
after it, in the plain form CI reads. Usage: ``python scripts/closing_line.py PYTEST_OUTPUT``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped)")
SUMMARY = re.compile(r"\d+ (passed|failed|errors?|skipped).* in [\d.]+s")


def closing_line(output: str) -> str:
    lines = [line for line in output.splitlines() if SUMMARY.search(line)]
    if not lines:
        return "tests: no pytest summary found"
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for number, word in COUNT.findall(lines[-1]):
        key = "failed" if word.startswith("error") else word
        counts[key] += int(number)
    line = f"tests: {counts['passed']} passed, {counts['failed']} failed"
    return line + (f", {counts['skipped']} skipped" if counts["skipped"] else "")


if __name__ == "__main__":
    print(closing_line(Path(sys.argv[1]).read_text(errors="replace")))
