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
from typing import Any

from apcore_mcp.pipeline.internals import (
    PROTECTED_LOG_FIELDS,
    REDACTED_VALUE,
    compile_value_regexes,
    default_sensitive_keys,
    key_matches,
    value_matches,
)

_MAX_REMEMBERED_KEYS = 4096
_ATOMS = frozenset({str, int, float, bool, type(None)})


class Redaction:
    """One set of redaction rules (apcore's ``RedactionConfig``), prepared for repeated use."""

    def __init__(self, rules: Any) -> None:
        keys = rules.sensitive_keys
        self.keys: list[str] = list(keys) if keys is not None else default_sensitive_keys()
        patterns = rules.compiled_regex_patterns
        self.value_regexes = compile_value_regexes(patterns)[0] if patterns else []
        self.token: str = rules.replacement if rules.replacement is not None else REDACTED_VALUE
        self._verdicts: dict[Any, bool] = {}

    def key_matches(self, key: Any) -> bool:
        # The same few field names come back on every call: remember apcore's verdict for each.
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = key_matches(key, self.keys)
            if len(self._verdicts) < _MAX_REMEMBERED_KEYS:
                self._verdicts[key] = verdict
        return verdict

    def redact(self, data: dict[str, Any], walker: Any | None, schema: dict[str, Any]) -> dict[str, Any]:
        """A redacted deep copy of ``data``; ``walker`` is apcore's schema walker, None if nothing is marked."""
        redacted = copy_data(data)
        if walker is not None:
            walker.redact_fields(redacted, schema)
        redact_keys_and_values(redacted, self)
        return redacted


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
    """Redact ``data`` in place by key name and by string value, at every depth."""
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
