"""Bounds on the shape of a JSON text, checked before anything parses it.

A body within the byte limit can still be costly: 200,000 keys take seconds to go through
the MCP stack, and nesting thousands deep exhausts parsers' recursion. ``excess`` says whether
a text nests deeper than ``max_depth`` (objects and arrays) or holds more than ``max_items``
keys and elements (all levels together), without parsing it.

Counting bytes is enough for nearly every body: a container holding n items has n - 1 commas,
so ``,`` + ``{`` + ``[`` bounds the items and ``{`` + ``[`` the depth from above (characters in
strings only add to the counts). Only a body over a bound by count is measured exactly, on its
skeleton: the text with every string cut down to a ``"`` and everything but ``,:{}[]`` dropped
(a split at quotes, or a regular expression pass when a backslash may escape one). All of it
is linear in the size of the text; 200,000 keys (3.5 MB) take about 20 ms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

# A string, escapes included; an unterminated one runs to the end of the text (a match never
# fails, so the scan stays linear on malformed input).
_STRING = re.compile(rb'"[^"\\]*(?:\\[\s\S]?[^"\\]*)*(?:"|\Z)')
_WHITESPACE = b" \t\r\n"
_NOT_SKELETON = bytes(range(256)).translate(None, b'",:{}[]')
_NOT_BRACKETS = bytes(range(256)).translate(None, b"{}[]")
_STEP = {ord("{"): 1, ord("["): 1, ord("}"): -1, ord("]"): -1}


@dataclass(frozen=True)
class JsonBounds:
    """The deepest nesting and the most keys and elements a JSON text may have."""

    max_depth: int
    max_items: int

    def excess(self, text: bytes) -> str | None:
        """Which bound ``text`` exceeds, in words, or ``None`` when it is within both.

        The words: ``has more than 100000 JSON keys and elements`` or ``is nested more than 64
        levels deep``. Malformed JSON within the bounds is ``None`` too: its parser says why.
        """
        containers = text.count(b"{") + text.count(b"[")
        items_may_exceed = text.count(b",") + containers > self.max_items
        depth_may_exceed = containers > self.max_depth
        if not (items_may_exceed or depth_may_exceed):
            return None  # the common case: no further work
        bones = _skeleton(text)
        if items_may_exceed and _items(bones, text) > self.max_items:
            return f"has more than {self.max_items} JSON keys and elements"
        if depth_may_exceed and _depth(bones) > self.max_depth:
            return f"is nested more than {self.max_depth} levels deep"
        return None


def _skeleton(text: bytes) -> bytes:
    """``text``'s ``,:{}[]`` outside strings, with a ``"`` for each string; numbers, literals and spaces dropped."""
    if b"\\" in text:  # a quote may be escaped: only a scanner knows which quotes end strings
        return _STRING.sub(b'"', text).translate(None, _NOT_SKELETON)
    # Without escapes, text is outside strings before the first quote, then after every second one.
    return b'"'.join(text.translate(None, _NOT_SKELETON).split(b'"')[::2])


def _items(bones: bytes, text: bytes) -> int:
    """Keys and elements: the commas, plus one per non-empty container.

    In the skeleton an object with a key shows its ``:``, but ``[]`` is an empty array or one
    holding a single number or literal; only when that decides the answer is ``text`` looked at
    again, keeping those.
    """
    nonempty = bones.count(b",") + bones.count(b"{") + bones.count(b"[") - bones.count(b"{}")
    maybe_empty = bones.count(b"[]")
    if not maybe_empty:
        return nonempty
    exact = _STRING.sub(b'"', text).translate(None, _WHITESPACE)
    return nonempty - exact.count(b"[]")


def _depth(bones: bytes) -> int:
    """How deep the objects and arrays of a skeleton nest."""
    brackets = bones.translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
