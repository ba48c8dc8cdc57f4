"""The apcore 0.32 internals the fast pipeline reuses, named in one place.

The fast steps must behave exactly as apcore's built-in ones, so where apcore defines a rule in a
private helper (how a pydantic error becomes an ``errors`` list, how a module declares its
timeout, how redaction walks a schema and matches keys) we call that helper rather than copy it.
If an apcore release renames one, this import fails loudly instead of the semantics drifting
silently, and ``tests/test_pipeline_equivalence.py`` checks the meaning stays the same.
"""

from __future__ import annotations

from apcore.builtin_steps import (
    BuiltinExecute,
    BuiltinInputValidation,
    BuiltinModuleLookup,
    BuiltinOutputValidation,
)
from apcore.builtin_steps import _convert_validation_errors as convert_validation_errors
from apcore.builtin_steps import _read_module_timeout_ms as read_module_timeout_ms
from apcore.builtin_steps import _resolve_redaction as resolve_redaction
from apcore.utils.pattern import match_glob
from apcore.utils.redaction import PROTECTED_LOG_FIELDS, REDACTED_VALUE, compile_value_regexes
from apcore.utils.redaction import _compact_for_match as compact_for_match
from apcore.utils.redaction import _default_sensitive_keys as default_sensitive_keys
from apcore.utils.redaction import _key_matches as key_matches
from apcore.utils.redaction import _normalize_for_match as normalize_for_match
from apcore.utils.redaction import _SchemaRedactor as SchemaRedactor
from apcore.utils.redaction import _value_matches as value_matches

__all__ = [
    "PROTECTED_LOG_FIELDS",
    "REDACTED_VALUE",
    "BuiltinExecute",
    "BuiltinInputValidation",
    "BuiltinModuleLookup",
    "BuiltinOutputValidation",
    "SchemaRedactor",
    "compact_for_match",
    "compile_value_regexes",
    "convert_validation_errors",
    "default_sensitive_keys",
    "key_matches",
    "match_glob",
    "normalize_for_match",
    "read_module_timeout_ms",
    "resolve_redaction",
    "value_matches",
]
