"""What a call derives from its module, computed once per module version.

apcore's built-in steps rebuild ``model_json_schema()`` three times per call (early input
redaction, input validation, output validation) and compile a reference resolver over it each
time, to find ``x-sensitive`` fields. None of that changes between calls of the same module, so a
:class:`PlanCache` keeps one :class:`ModulePlan` per module object, built on first use, dropped
when the registry registers or unregisters that module id, and rebuilt if the module's schema
classes are swapped on the instance.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol

from apcore import Registry

from apcore_mcp._apcore import SchemaRedactor
from apcore_mcp.pipeline.redaction import Redaction


class SchemaModel(Protocol):
    """A module's ``input_schema`` or ``output_schema``: a pydantic model class, or a stand-in
    such as ``JsonSchemaModel``. (``model_validate_json`` is used when present.)"""

    def model_json_schema(self) -> dict[str, Any]: ...  # pragma: no cover

    def model_validate(self, obj: dict[str, Any], /, *, strict: bool | None = None) -> object: ...  # pragma: no cover


class SchemaView:
    """One schema class: its JSON schema dict and the walkers redaction builds over it, made lazily.

    Built lazily (not at registration) so a schema whose ``model_json_schema()`` raises fails at
    the same step, with the same error, as under apcore; a failure is not remembered.
    """

    __slots__ = ("_lock", "_marked", "_redactors", "_schema", "model")

    def __init__(self, model: SchemaModel | None) -> None:
        self.model = model
        self._schema: dict[str, Any] | None = None
        self._marked: bool | None = None
        self._redactors: dict[str, SchemaRedactor] = {}
        self._lock = threading.Lock()

    @property
    def has_json_schema(self) -> bool:
        """Whether apcore would redact with this schema (it has a callable ``model_json_schema``)."""
        return self.model is not None and callable(getattr(self.model, "model_json_schema", None))

    def schema(self) -> dict[str, Any]:
        """The model's JSON schema dict (only asked for when ``has_json_schema``)."""
        if self._schema is None:
            assert self.model is not None
            self._schema = self.model.model_json_schema()
        return self._schema

    def field_redactor(self, token: str) -> SchemaRedactor | None:
        """apcore's ``x-sensitive`` walker for this schema, or None when no node is marked.

        The walker only ever replaces a value whose schema node says ``"x-sensitive": true``, and
        it resolves local references only, so a schema with no such node anywhere leaves data as
        it is: skipping the walk is exact.
        """
        if self._marked is None:
            self._marked = _declares_sensitive(self.schema())
        if not self._marked:
            return None
        redactor = self._redactors.get(token)
        if redactor is None:
            with self._lock:
                redactor = self._redactors.get(token) or SchemaRedactor(self.schema(), token)
                self._redactors[token] = redactor
        return redactor

    def redact(self, data: dict[str, Any], redaction: Redaction) -> dict[str, Any]:
        """``data`` redacted by ``redaction``'s rules and this schema's ``x-sensitive`` marks."""
        walker = self.field_redactor(redaction.token)
        return redaction.redact(data, walker, self.schema() if walker is not None else {})


def _declares_sensitive(schema: object) -> bool:
    """True if any mapping in the schema document carries ``"x-sensitive": true``."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node.get("x-sensitive") is True:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


class ModulePlan:
    """Per-module data the fast steps reuse; valid while the module keeps its schema classes."""

    __slots__ = ("input", "module", "output")

    def __init__(self, module: object) -> None:
        self.module = module
        self.input = SchemaView(getattr(module, "input_schema", None))
        self.output = SchemaView(getattr(module, "output_schema", None))

    def current_for(self, module: object) -> bool:
        return (
            self.module is module
            and getattr(module, "input_schema", None) is self.input.model
            and getattr(module, "output_schema", None) is self.output.model
        )


class PlanCache:
    """Module plans by module id and module object, invalidated by the registry's events.

    Plans hold their module, so an id cannot be reused by another object while its plan lives.
    The registry holds only a small listener that refers to the cache weakly; ``detach()``
    removes it.
    """

    def __init__(self, registry: Registry) -> None:
        self._plans: dict[str, dict[int, ModulePlan]] = {}
        self._registry = registry
        self._listener = _Invalidate(weakref.ref(self))
        registry.on("register", self._listener)
        registry.on("unregister", self._listener)

    def plan(self, module_id: str, module: object) -> ModulePlan:
        by_object = self._plans.get(module_id)
        plan = by_object.get(id(module)) if by_object is not None else None
        if plan is None or not plan.current_for(module):
            plan = ModulePlan(module)
            self._plans.setdefault(module_id, {})[id(module)] = plan
        return plan

    def invalidate(self, module_id: str) -> None:
        self._plans.pop(module_id, None)

    def __len__(self) -> int:
        return sum(len(by_object) for by_object in list(self._plans.values()))

    def detach(self) -> None:
        """Stop listening to the registry and forget every plan (idempotent)."""
        for event in ("register", "unregister"):
            self._registry.off(event, self._listener)
        self._plans.clear()


class _Invalidate:
    """The registry callback: forwards to a cache that may already be gone."""

    __slots__ = ("_cache",)

    def __init__(self, cache: weakref.ref[PlanCache]) -> None:
        self._cache = cache

    def __call__(self, module_id: str, module: object) -> None:
        cache = self._cache()
        if cache is not None:
            cache.invalidate(module_id)
