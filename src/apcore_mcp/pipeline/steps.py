"""apcore's lookup and validation steps with the per-module work taken from a :class:`PlanCache`.

Each class subclasses the built-in step it replaces and takes over its state (registry, toggle
state, redaction rules and any configured step fields), so ``isinstance`` checks, ``validate()``
dry runs, ``Executor.stream``'s post-stream steps (found by name) and the engine's trace see the
same step. Only the work that is the same on every call of a module moves to the plan: the
schema dicts and the redaction walkers built over them. Validation itself (strict, through the
JSON round trip as apcore does it), the ``errors`` lists, format warnings and the captured
``redacted_inputs`` / ``redacted_output`` are apcore's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import pydantic
from apcore import Registry, ToggleState
from apcore.context import GovernanceProjection
from apcore.errors import ModuleDisabledError, ModuleNotFoundError, SchemaValidationError
from apcore.pipeline import BaseStep, PipelineContext, StepResult
from apcore.schema.hardening import warn_format_violations

from apcore_mcp._apcore import (
    BuiltinInputValidation,
    BuiltinModuleLookup,
    BuiltinOutputValidation,
    adopt_state,
    convert_validation_errors,
    lookup_state,
    resolve_redaction,
    step_redaction,
)
from apcore_mcp.calls.inputs import validate_strictly
from apcore_mcp.calls.outputs import validate_output
from apcore_mcp.pipeline.plans import PlanCache, SchemaView
from apcore_mcp.pipeline.redaction import Redaction

if TYPE_CHECKING:
    from apcore_mcp.pipeline.install import FastPipeline

_CONTINUE = "continue"


class PlannedStep:
    """What the fast steps share: the plan cache and the step's redaction rules, prepared once."""

    plans: PlanCache
    redaction: Redaction
    pipeline: FastPipeline | None = None  # the installation this step belongs to (set by install_pipeline)

    @classmethod
    def adopt(cls, original: BaseStep, plans: PlanCache) -> Self:
        """A copy of the built-in step (all its state) that reads per-module data from ``plans``."""
        step = cls.__new__(cls)
        adopt_state(step, original)
        step.plans = plans
        step.redaction = Redaction(step_redaction(original) or resolve_redaction(None))
        return step


class FastModuleLookup(PlannedStep, BuiltinModuleLookup):  # type: ignore[misc]  # untyped base
    registry: Registry
    toggles: ToggleState

    @classmethod
    def adopt(cls, original: BaseStep, plans: PlanCache) -> Self:
        step = super().adopt(original, plans)
        step.registry, step.toggles = lookup_state(original)
        return step

    async def execute(self, ctx: PipelineContext) -> StepResult:
        if ctx.version_hint is not None:
            module = self.registry.get(ctx.module_id, version_hint=ctx.version_hint)
        else:
            module = self.registry.get(ctx.module_id)
        if module is None:
            raise ModuleNotFoundError(module_id=ctx.module_id)
        if self.toggles.is_disabled(ctx.module_id):
            raise ModuleDisabledError(module_id=ctx.module_id)
        ctx.module = module
        get_declared = getattr(self.registry, "get_declared_annotations", None)
        ctx.declared_annotations = get_declared(ctx.module_id) if callable(get_declared) else None
        if ctx.context is not None and hasattr(ctx.context, "redacted_inputs"):
            # Redacted before any middleware runs, so a logging middleware's before() sees it.
            view = self.plans.plan(ctx.module_id, module).input
            if view.has_json_schema:
                ctx.context.redacted_inputs = view.redact(ctx.inputs, self.redaction)
            else:
                ctx.context.redacted_inputs = dict(ctx.inputs)
        ctx.governance_projection = GovernanceProjection.of(ctx.inputs)
        return StepResult(action=_CONTINUE)


class FastInputValidation(PlannedStep, BuiltinInputValidation):  # type: ignore[misc]  # untyped base
    async def execute(self, ctx: PipelineContext) -> StepResult:
        module = ctx.module
        if module is None:
            return StepResult(action="abort", explanation="No module set on context")
        view = self.plans.plan(ctx.module_id, module).input
        model = view.model
        if model is None:
            ctx.validated_inputs = ctx.inputs
            return StepResult(action=_CONTINUE)
        try:
            validate_strictly(model, ctx.inputs)
        except pydantic.ValidationError as exc:
            errors = convert_validation_errors(exc)
            raise SchemaValidationError(message=f"Input validation failed: {errors}", errors=errors) from exc
        warn_format_violations(ctx.inputs, model)
        ctx.validated_inputs = ctx.inputs
        if view.has_json_schema:
            redacted = view.redact(ctx.inputs, self.redaction)
            if ctx.context is not None and hasattr(ctx.context, "redacted_inputs"):
                ctx.context.redacted_inputs = redacted
        return StepResult(action=_CONTINUE)


class FastOutputValidation(PlannedStep, BuiltinOutputValidation):  # type: ignore[misc]  # untyped base
    async def execute(self, ctx: PipelineContext) -> StepResult:
        module = ctx.module
        if module is None:
            return StepResult(action="abort", explanation="No module set on context")
        view = self.plans.plan(ctx.module_id, module).output
        captures = ctx.context is not None and hasattr(ctx.context, "redacted_output")
        if view.model is None:
            ctx.validated_output = ctx.output
            # No schema: capture the output as is, as the input capture point does.
            if captures:
                ctx.context.redacted_output = dict(ctx.output) if isinstance(ctx.output, dict) else None
            return StepResult(action=_CONTINUE)
        if ctx.output is None:
            ctx.validated_output = None
            if captures:
                ctx.context.redacted_output = None
            return StepResult(action=_CONTINUE)
        validate_output(view.model, ctx.output)
        warn_format_violations(ctx.output, view.model)
        ctx.validated_output = ctx.output
        if captures:
            ctx.context.redacted_output = _redacted_output(self.redaction, ctx.output, view)
        return StepResult(action=_CONTINUE)


def _redacted_output(redaction: Redaction, output: dict[str, Any], view: SchemaView) -> dict[str, Any] | None:
    if view.has_json_schema:
        return view.redact(output, redaction)
    return dict(output) if output else None
