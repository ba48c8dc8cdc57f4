"""The fenced blocks of README.md and docs/: where each is, its language and the markers before it
(``tests/project/test_docs.py`` says how every block is accounted for)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)\s*$")
COMMENT = re.compile(r"^\s*<!--\s*(?P<text>.*?)\s*-->\s*$")


def clean_env() -> dict[str, str]:
    """This environment without APCORE_MCP_* (a documented command must work without them)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("APCORE_MCP_")}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    comments: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.body.split("\n", 1)[0]

    def marker(self, kind: str) -> str | None:
        """What follows ``kind:`` (or ``kind``) in a comment right before the block, if one says it."""
        for comment in self.comments:
            found = re.match(rf"{kind}:?\s+(.*)$|{kind}:$", comment)
            if found:
                return (found.group(1) or "").strip()
        return None


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks_of(page: Path) -> Iterator[Block]:
    lines = page.read_text().split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        comments: list[str] = []
        back = index - 1
        while back >= 0 and (comment := COMMENT.match(lines[back])):
            comments.insert(0, comment.group("text"))
            back -= 1
        fence, body, opened = opening.group("fence"), [], index
        index += 1
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index].removeprefix(opening.group("indent")))
            index += 1
        assert index < len(lines), f"{page}: the block opened by {opening.group(0)!r} is never closed"
        yield Block(page, opened + 1, opening.group("lang"), "\n".join(body) + "\n", comments)
        index += 1


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks_of(page)]


def marked(block_id: str) -> list[Block]:
    """The blocks marked ``run by: tests/project/test_docs.py#<block_id>``."""
    found = [block for block in all_blocks() if block.marker("run by") == f"tests/project/test_docs.py#{block_id}"]
    assert found, f"no block is marked run by tests/project/test_docs.py#{block_id}"
    return found


def one(block_id: str, lang: str = "bash") -> Block:
    found = [block for block in marked(block_id) if block.lang == lang]
    assert len(found) == 1, f"{block_id}: expected one {lang} block, found {[b.where for b in found]}"
    return found[0]


def run_by_testing_docs(block: Block) -> bool:
    """A ``# file:`` or ``# run:`` block of docs/testing.md, which tests/testing/test_testing_docs.py runs."""
    return block.page == DOCS / "testing.md" and block.first_line.startswith(("# file: ", "# run: "))


def unmarked(lang: str) -> list[Block]:
    return [
        block
        for block in all_blocks()
        if block.lang == lang
        and block.marker("run by") is None
        and block.marker("not run") is None
        and not run_by_testing_docs(block)
    ]
