"""Which scripted turn answers a call: per test case and tool, first in first out.

A call names its test case in ``_meta["apcore-mcp/testCase"]`` or with a ``[test_case_id=...]``
directive in one of its string arguments; otherwise it plays the ``default`` case. The in-band
mode also brings the turns themselves: ``[mcp_responses_json=<base64 JSON list>]``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import deque
from collections.abc import Mapping
from typing import Any

from apcore_mcp.testing.fields import DocumentError, Field
from apcore_mcp.testing.scripted.script import DEFAULT_CASE, Script, Turn, parse_turns

TEST_CASE_META = "apcore-mcp/testCase"
_CASE_DIRECTIVE = re.compile(r"\[test_case_id=([^\]\s]+)\]")
_RESPONSES_DIRECTIVE = re.compile(r"\[mcp_responses_json=([A-Za-z0-9+/=_-]*)\]")


class NoTurnLeft(LookupError):
    """A tool was called more often than its test case scripted; the message says so."""


def case_of(arguments: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> str:
    """The test case a call plays: ``_meta`` first, then a directive in a string argument."""
    if meta and isinstance(meta.get(TEST_CASE_META), str):
        return str(meta[TEST_CASE_META])
    for value in (arguments or {}).values():
        if isinstance(value, str) and (found := _CASE_DIRECTIVE.search(value)):
            return found.group(1)
    return DEFAULT_CASE


def read_directives(text: str) -> tuple[str | None, tuple[Turn, ...] | None]:
    """``(test case id, turns)`` from a directive text; either may be absent.

    Raises:
        DocumentError: the responses directive is not base64 of a valid JSON list of turns.
    """
    case = _CASE_DIRECTIVE.search(text)
    case_id = case.group(1) if case else None
    encoded = _RESPONSES_DIRECTIVE.search(text)
    if encoded is None:
        return case_id, None
    source = f"mcp_responses_json (test case {case_id or DEFAULT_CASE})"
    payload = encoded.group(1)
    try:
        standard = payload.replace("-", "+").replace("_", "/")  # accept the URL-safe alphabet too
        raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        value = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise DocumentError(f"{source}: not base64 of a JSON document: {exc}") from exc
    return case_id, parse_turns(Field(value, source, ""))


def encode_responses(turns: list[dict[str, Any]]) -> str:
    """The directive text carrying ``turns`` (the inverse of ``read_directives``), for test writers."""
    return base64.b64encode(json.dumps(turns).encode()).decode()


class TurnQueues:
    """The turns still to play, per ``(test case, tool)``. One event loop uses it: no lock."""

    def __init__(self, script: Script) -> None:
        self._queues: dict[tuple[str, str], deque[Turn]] = {}
        self._scripted: dict[tuple[str, str], int] = {}
        for name, tool in script.tools.items():
            for case_id, turns in tool.cases.items():
                self._put((case_id, name), turns)

    def _put(self, key: tuple[str, str], turns: tuple[Turn, ...]) -> None:
        self._queues[key] = deque(turns)
        self._scripted[key] = len(turns)

    def load(self, case_id: str, tool: str, turns: tuple[Turn, ...]) -> None:
        """Queue ``turns`` unless this case already has a queue (a repeated directive keeps its place)."""
        if (case_id, tool) not in self._queues:
            self._put((case_id, tool), turns)

    def pop(self, case_id: str, tool: str) -> Turn:
        """The next turn.

        Raises:
            NoTurnLeft: none scripted for this case, or all of them played.
        """
        queue = self._queues.get((case_id, tool))
        if queue is None:
            raise NoTurnLeft(f"no responses scripted for tool {tool!r} in test case {case_id!r}")
        if not queue:
            count = self._scripted[(case_id, tool)]
            raise NoTurnLeft(
                f"tool {tool!r} in test case {case_id!r} was called more often than scripted ({count} response(s))"
            )
        return queue.popleft()
