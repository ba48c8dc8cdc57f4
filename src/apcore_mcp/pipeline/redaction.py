"""apcore's capture-point redaction (``redact_sensitive``), with what does not change prepared once.

``Redaction(rules).redact(data, walker, schema)`` gives the same result as apcore's
``redact_sensitive(data, schema, sensitive_keys=..., regex_patterns=..., replacement=...)``: a
deep copy of ``data`` in which ``x-sensitive`` fields (found by apcore's own schema walker),
values under sensitive key names and string values matching a value pattern are replaced by the
token. What differs is only the cost: the rules are prepared once, each key name's verdict is
remembered, and JSON-shaped data is copied without ``copy.deepcopy``'s generic machinery.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from apcore.observability.context_logger import RedactionConfig

from apcore_mcp._apcore import (
    PROTECTED_LOG_FIELDS,
    REDACTED_VALUE,
    SchemaRedactor,
    compact_for_match,
    compile_value_regexes,
    default_sensitive_keys,
    match_glob,
    normalize_for_match,
    value_matches,
)

_MAX_REMEMBERED_KEYS = 4096
_ATOMS = frozenset({str, int, float, bool, type(None)})


class Redaction:
    """One set of redaction rules (apcore's ``RedactionConfig``), prepared for repeated use."""

    def __init__(self, rules: RedactionConfig) -> None:
        keys = rules.sensitive_keys
        self.keys: list[str] = list(keys) if keys is not None else default_sensitive_keys()
        patterns = rules.compiled_regex_patterns
        self.value_regexes = compile_value_regexes(patterns)[0] if patterns else []
        self.token: str = rules.replacement if rules.replacement is not None else REDACTED_VALUE
        # apcore's key rule (``_key_matches``) with each pattern's folded forms made once: it
        # folds every pattern again for every key, ~30 us a key with the default list, which
        # made a body of many distinct keys cost seconds.
        patterns = [key.lower() for key in self.keys if key]
        self._globs = [pattern for pattern in patterns if "*" in pattern or "?" in pattern]
        plain = [key for key in self.keys if key and "*" not in key and "?" not in key]
        # Substring patterns as one alternation per folded form: one C-level search a key.
        self._normalized = _any_of(normalize_for_match(key) for key in plain)
        self._compact = _any_of(compact_for_match(key) for key in plain)
        self._verdicts: dict[str, bool] = {}

    def key_matches(self, key: str) -> bool:
        # The same few field names come back on every call: remember the verdict for each.
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._match(key)
            if len(self._verdicts) < _MAX_REMEMBERED_KEYS:
                self._verdicts[key] = verdict
        return verdict

    def _match(self, key: str) -> bool:
        norm_key, compact_key, lower_key = normalize_for_match(key), compact_for_match(key), key.lower()
        if self._normalized.search(norm_key) or self._compact.search(compact_key):
            return True
        return any(match_glob(pattern, lower_key) for pattern in self._globs)

    def redact(self, data: dict[str, Any], walker: SchemaRedactor | None, schema: dict[str, Any]) -> dict[str, Any]:
        """A redacted deep copy of ``data``; ``walker`` is apcore's schema walker, None if nothing is marked."""
        redacted = copy_data(data)
        if walker is not None:
            walker.redact_fields(redacted, schema)
        redact_keys_and_values(redacted, self)
        return redacted


def _any_of(substrings: Iterable[str]) -> re.Pattern[str]:
    """A pattern finding any of ``substrings`` (none: a pattern that never matches)."""
    alternatives = sorted(set(substrings))
    return re.compile("|".join(map(re.escape, alternatives)) if alternatives else r"(?!)")


class _NotPlain(Exception):
    """The data holds something other than JSON-shaped, unshared dicts and lists."""


def copy_data(data: dict[str, Any]) -> dict[str, Any]:
    """``copy.deepcopy(data)``, done directly when ``data`` is plain JSON-shaped data.

    Plain means exact ``dict``/``list`` containers, each reached once (no sharing, no cycle),
    holding exact ``str``/``int``/``float``/``bool``/``None`` values and keys; for those, deepcopy
    returns the atoms themselves and fresh containers, which is what this does. Anything else
    goes to ``copy.deepcopy``, so its result is always the same as deepcopy's.
    """
    try:
        copied: dict[str, Any] = _copy(data, set())
    except _NotPlain:
        return copy.deepcopy(data)
    return copied


def _copy(value: Any, seen: set[int]) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is not dict and kind is not list:
        raise _NotPlain
    if id(value) in seen:
        raise _NotPlain
    seen.add(id(value))
    if kind is list:
        return [_copy(item, seen) for item in value]
    copied = {}
    for key, item in value.items():
        if type(key) not in _ATOMS:
            raise _NotPlain
        copied[key] = _copy(item, seen)
    return copied


def redact_keys_and_values(data: dict[Any, Any], rules: Redaction) -> None:
    """Redact in place by key name and by string value, at every depth.

    The walk of apcore's ``_redact_by_keys_and_regex`` (PROTOCOL_SPEC 10.6.1): a non-null value
    whose key matches, or a string value matching a value pattern, becomes the token;
    correlation fields are exempt from both rules but still descended into.
    """
    for key in data:
        value = data[key]
        if value is None:
            continue
        if key not in PROTECTED_LOG_FIELDS and (rules.key_matches(key) or value_matches(value, rules.value_regexes)):
            data[key] = rules.token
        elif isinstance(value, dict):
            redact_keys_and_values(value, rules)
        elif isinstance(value, list):
            _redact_list(value, rules)


def _redact_list(items: list[Any], rules: Redaction) -> None:
    for index, item in enumerate(items):
        if item is None:
            continue
        if isinstance(item, dict):
            redact_keys_and_values(item, rules)
        elif isinstance(item, list):
            _redact_list(item, rules)
        elif value_matches(item, rules.value_regexes):
            items[index] = rules.token
