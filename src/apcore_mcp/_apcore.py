"""The apcore 0.32 internals the package relies on, named in one place (and nowhere else).

The fast steps must behave exactly as apcore's built-in ones, so where apcore defines a rule in a
private helper (how a pydantic error becomes an ``errors`` list, how a module declares its
timeout, how redaction walks a schema and matches keys) we call that helper rather than copy it.
If an apcore release renames one, this import fails loudly instead of the semantics drifting
silently, and ``tests/pipeline/test_pipeline_equivalence.py`` checks the meaning stays the same.

The functions below read the private state apcore offers no getter for: what a built-in step was
built with, and an ``Executor``'s ACL and approval handler. ``tests/pipeline/test_private_api.py`` fails
if any other module of the package touches a private apcore name. ``docs/executor-fork.md``
says what apcore would need to offer for this module to go.
"""

from __future__ import annotations

from typing import Any

from apcore import ACL, ApprovalHandler, BaseStep, Context, Executor, PreflightResult, Registry, ToggleState
from apcore.builtin_steps import (
    BuiltinExecute,
    BuiltinInputValidation,
    BuiltinModuleLookup,
    BuiltinOutputValidation,
)
from apcore.builtin_steps import _convert_validation_errors as convert_validation_errors
from apcore.builtin_steps import _read_module_timeout_ms as read_module_timeout_ms
from apcore.builtin_steps import _resolve_redaction as resolve_redaction
from apcore.observability.context_logger import RedactionConfig
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
    "adopt_state",
    "compact_for_match",
    "compile_value_regexes",
    "convert_validation_errors",
    "default_sensitive_keys",
    "default_timeout_ms",
    "executor_acl",
    "executor_approval_handler",
    "executor_preflight",
    "key_matches",
    "lookup_state",
    "match_glob",
    "normalize_for_match",
    "read_module_timeout_ms",
    "resolve_redaction",
    "step_redaction",
    "value_matches",
]


def adopt_state(step: BaseStep, original: BaseStep) -> None:
    """Give ``step`` (a subclass instance made with ``__new__``) every field of the built-in ``original``."""
    step.__dict__.update(original.__dict__)


def lookup_state(step: BuiltinModuleLookup) -> tuple[Registry, ToggleState]:
    """The registry and the module toggles a built-in module-lookup step was built with."""
    return step._registry, step._toggle_state


def step_redaction(step: BaseStep) -> RedactionConfig | None:
    """The redaction rules a built-in step was given, or ``None`` for apcore's defaults."""
    rules: RedactionConfig | None = step.__dict__.get("_redaction")
    return rules


def default_timeout_ms(step: BuiltinExecute) -> int:
    """The execute step's default module timeout (``executor.default_timeout`` as the step read it)."""
    timeout: int = step._default_timeout
    return timeout


def executor_acl(executor: Executor) -> ACL | None:
    """The ACL ``executor`` enforces: apcore has ``set_acl`` but no getter."""
    acl: ACL | None = getattr(executor, "_acl", None)
    return acl


def executor_approval_handler(executor: Executor) -> ApprovalHandler | None:
    """``executor``'s approval handler: apcore has ``set_approval_handler`` but no getter."""
    handler: ApprovalHandler | None = getattr(executor, "_approval_handler", None)
    return handler


async def executor_preflight(
    executor: Executor, module_id: str, inputs: dict[str, Any], context: Context
) -> PreflightResult:
    """``executor.validate()`` awaited on the running loop: the public one, called from a loop,
    runs it in a thread of its own, and from a thread leaves an event loop open on the executor."""
    result: PreflightResult = await executor._validate_async(module_id, inputs, context)
    return result
