"""What a declarative case expects of a tool call, and the check that explains every mismatch.

The checks are pure functions of the call's outcome: the result as it travels on the wire
(``camelCase`` JSON), or the JSON-RPC error, and the progress notifications received.
Each failed expectation is one message; structured values come with a unified diff.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()
_PATH_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+|\*)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


@dataclass(frozen=True)
class Outcome:
    """What a call produced: a result (wire JSON) or a JSON-RPC error, and the progress seen."""

    result: dict[str, Any] | None = None
    error_code: int | None = None
    error_message: str | None = None
    progress: tuple[float, ...] = ()

    @property
    def text(self) -> str:
        """The text blocks of the result, joined by newlines."""
        blocks = (self.result or {}).get("content") or []
        return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")


@dataclass(frozen=True)
class Expectation:
    is_error: bool | None = None
    text: str | None = None
    text_contains: tuple[str, ...] = ()
    text_regex: re.Pattern[str] | None = None
    structured: object = _MISSING
    json_path: dict[str, Any] = field(default_factory=dict)
    error_code: int | None = None
    error_message: str | None = None
    content_types: tuple[str, ...] | None = None
    progress_count: int | None = None

    @property
    def wants_protocol_error(self) -> bool:
        return self.error_code is not None


def check(expected: Expectation, outcome: Outcome) -> list[str]:
    """Every way ``outcome`` differs from ``expected`` (empty when it matches)."""
    if outcome.result is None:
        return _check_error(expected, outcome)
    if expected.wants_protocol_error:
        return [f"expected JSON-RPC error {expected.error_code}, got a result:\n{pretty(outcome.result)}"]
    problems: list[str] = []
    is_error = bool(outcome.result.get("isError"))
    if expected.is_error is not None and is_error != expected.is_error:
        problems.append(f"is_error: expected {expected.is_error}, got {is_error}; text: {outcome.text!r}")
    if expected.error_message is not None and expected.error_message not in outcome.text:
        problems.append(f"error_message: {expected.error_message!r} is not in the result text {outcome.text!r}")
    problems += _check_text(expected, outcome.text)
    problems += _check_structure(expected, outcome.result)
    if expected.progress_count is not None and len(outcome.progress) != expected.progress_count:
        problems.append(f"progress_count: expected {expected.progress_count}, got {len(outcome.progress)}")
    return problems


def _check_error(expected: Expectation, outcome: Outcome) -> list[str]:
    if not expected.wants_protocol_error and expected.error_message is None:
        return [f"unexpected JSON-RPC error {outcome.error_code}: {outcome.error_message}"]
    problems = []
    if expected.error_code is not None and outcome.error_code != expected.error_code:
        problems.append(
            f"error_code: expected {expected.error_code}, got {outcome.error_code} ({outcome.error_message})"
        )
    if expected.error_message is not None and expected.error_message not in (outcome.error_message or ""):
        problems.append(f"error_message: {expected.error_message!r} is not in {outcome.error_message!r}")
    return problems


def _check_text(expected: Expectation, text: str) -> list[str]:
    problems = []
    if expected.text is not None and text != expected.text:
        problems.append("text differs:\n" + diff(expected.text, text))
    problems += [f"text_contains: {part!r} is not in {text!r}" for part in expected.text_contains if part not in text]
    if expected.text_regex is not None and not expected.text_regex.search(text):
        problems.append(f"text_regex: /{expected.text_regex.pattern}/ does not match {text!r}")
    return problems


def _check_structure(expected: Expectation, result: dict[str, Any]) -> list[str]:
    problems = []
    if expected.structured is not _MISSING:
        actual = result.get("structuredContent")
        if not is_subset(expected.structured, actual):
            problems.append(
                "structured content does not contain the expected values:\n" + diff(expected.structured, actual)
            )
    for path, want in expected.json_path.items():
        found = json_path(result, path)
        if found is _MISSING:
            problems.append(f"json_path {path}: nothing there in\n{pretty(result)}")
        elif not is_subset(want, found):
            problems.append(f"json_path {path} differs:\n" + diff(want, found))
    if expected.content_types is not None:
        types = tuple(block.get("type") for block in result.get("content") or [])
        if types != expected.content_types:
            problems.append(f"content_types: expected {list(expected.content_types)}, got {list(types)}")
    return problems


def is_subset(expected: object, actual: object) -> bool:
    """Mappings match when every expected key matches (extra keys allowed); lists item by item,
    same length; anything else by equality."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and is_subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return (bool(expected == actual) and type(expected) is type(actual)) or _same_number(expected, actual)


def _same_number(expected: object, actual: object) -> bool:
    numbers = (int, float)
    return (
        isinstance(expected, numbers)
        and isinstance(actual, numbers)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
        and expected == actual
    )


def check_path(path: str) -> None:
    """Raises ``ValueError`` when ``path`` is not ``$`` followed by ``.key``, ``[n]``, ``[*]`` or ``['key']``."""
    if not path.startswith("$"):
        raise ValueError("a JSON path starts with '$'")
    rest = path[1:]
    while rest:
        step = _PATH_STEP.match(rest)
        if step is None:
            raise ValueError(f"cannot read {rest!r} (use .key, [n], [*] or ['key'])")
        rest = rest[step.end() :]


def json_path(document: object, path: str) -> object:
    """The value at ``path`` (``[*]`` collects a list), or the ``_MISSING`` marker."""
    check_path(path)
    return _walk(document, [m for m in _PATH_STEP.finditer(path[1:])])


def _walk(node: object, steps: list[re.Match[str]]) -> object:
    if not steps:
        return node
    step, rest = steps[0], steps[1:]
    key, index = step.group(1) or step.group(3) or step.group(4), step.group(2)
    if index == "*":
        if not isinstance(node, list):
            return _MISSING
        found = [_walk(item, rest) for item in node]
        return [item for item in found if item is not _MISSING]
    if index is not None:
        position = int(index)
        return _walk(node[position], rest) if isinstance(node, list) and position < len(node) else _MISSING
    if isinstance(node, dict) and key in node:
        return _walk(node[key], rest)
    return _MISSING


def pretty(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def diff(expected: object, actual: object) -> str:
    """A unified diff, expected first (``-``) and actual second (``+``)."""
    left = expected if isinstance(expected, str) else pretty(expected)
    right = actual if isinstance(actual, str) else pretty(actual)
    lines = difflib.unified_diff(left.splitlines(), right.splitlines(), "expected", "actual", lineterm="")
    return "\n".join(lines)


MISSING = _MISSING
