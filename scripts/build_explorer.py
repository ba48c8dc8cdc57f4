"""Build ``static/explorer.html``, the one self-contained explorer page, from ``static/explorer/``.

The page is served as one file with no CDN and no build step for a user; its sources are split so
each part can be read (and worked on) alone. ``page.html`` holds the markup with two markers:
``/* @styles */`` takes ``styles/*.css`` and ``/* @scripts */`` takes ``scripts/*.js``, each in
name order. The scripts share one function scope (one IIFE), as the page always had.

    python scripts/build_explorer.py           # write static/explorer.html
    python scripts/build_explorer.py --check   # exit 1 if not current (tests/http/explorer/test_explorer_build.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "static" / "explorer"
BUILT = ROOT / "static" / "explorer.html"
NOTICE = "<!-- Built from static/explorer/ by scripts/build_explorer.py: edit the sources, then run it. -->\n"


def build(sources: Path = SOURCES) -> str:
    page = (sources / "page.html").read_text("utf-8")
    styles = "".join(path.read_text("utf-8") for path in sorted((sources / "styles").glob("*.css")))
    scripts = "".join(path.read_text("utf-8") for path in sorted((sources / "scripts").glob("*.js")))
    for marker in ("/* @styles */\n", "/* @scripts */\n"):
        if page.count(marker) != 1:
            raise ValueError(f"page.html must hold {marker.strip()!r} exactly once")
    doctype, rest = page.split("\n", 1)
    page = f"{doctype}\n{NOTICE}{rest}"
    page = page.replace("/* @styles */\n", styles)
    return page.replace("/* @scripts */\n", f'"use strict";\n(function () {{\n{scripts}}})();\n')


def main(argv: list[str]) -> int:
    built = build()
    if "--check" in argv:
        if BUILT.read_text("utf-8") != built:
            print(f"{BUILT.relative_to(ROOT)} is not current: run python scripts/build_explorer.py", file=sys.stderr)
            return 1
        return 0
    BUILT.write_text(built, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
