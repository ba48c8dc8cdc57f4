"""Modules and a two-executor harness for the pipeline tests (standard apcore vs fast pipeline).

Every module records the context it ran with, so the ``redacted_inputs`` / ``redacted_output``
captures apcore leaves on the call's context can be compared after the call; the ``Recorder``
middleware records what each hook saw (including those captures at that moment).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

from apcore import Config, Context, Executor, ModuleAnnotations, Registry
from apcore.acl import ACL, ACLRule
from apcore.approval import AlwaysDenyHandler, AutoApproveHandler
from apcore.middleware import Middleware
from pydantic import BaseModel, Field

from apcore_mcp.pipeline import install_pipeline

SENSITIVE: dict[str, Any] = {"x-sensitive": True}
HANG_GUARD_S = 5.0


class Recording:
    """Base of the test modules: remembers every context it ran with."""

    def __init__(self) -> None:
        self.contexts: list[Any] = []


# -- schemas -------------------------------------------------------------------------------------------


class Card(BaseModel):
    number: str = Field(json_schema_extra=SENSITIVE)
    holder: str


class Account(BaseModel):
    user: str
    password: str = Field(json_schema_extra=SENSITIVE)
    card: Card
    cards: list[Card] = []
    api_key: str = ""  # sensitive by name (apcore's default key list), not by schema
    notes: dict[str, str] = {}


class Session(BaseModel):
    user: str
    session_token: str = Field(json_schema_extra=SENSITIVE)
    history: list[Card] = []


class Point(BaseModel):
    x: int
    y: int


class Shape(BaseModel):
    name: str
    points: list[Point]
    kind: Literal["open", "closed"] = "open"
    scale: float = Field(default=1.0, gt=0, le=10)


class Area(BaseModel):
    area: float
    vertices: int


class Text(BaseModel):
    text: str = Field(max_length=40)


class Echoed(BaseModel):
    text: str


class When(BaseModel):
    at: datetime


class Wait(BaseModel):
    seconds: float = HANG_GUARD_S


class Nothing(BaseModel):
    pass


# -- modules ---------------------------------------------------------------------------------------------


class Login(Recording):
    description = "Sensitive fields: by schema mark, nested, in lists, and by key name"
    input_schema = Account
    output_schema = Session

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"user": inputs["user"], "session_token": "tok-" + inputs["user"], "history": inputs.get("cards", [])}


class Measure(Recording):
    description = "Nested models, a literal, bounds"
    input_schema = Shape
    output_schema = Area

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"area": float(len(inputs["points"])), "vertices": len(inputs["points"])}


class Echo(Recording):
    description = "Echoes its text"
    input_schema = Text
    output_schema = Echoed

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"text": inputs["text"]}


class BadOutput(Recording):
    description = "Returns an output its schema rejects"
    input_schema = Text
    output_schema = Area

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"area": "large", "vertices": 1}


class NoOutputSchema(Recording):
    description = "Declares no output schema"
    input_schema = Text

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"text": inputs["text"], "password": "hunter2"}


class NoSchemas(Recording):
    description = "Declares no schema at all"

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        return {"seen": sorted(inputs), "token": "abc"}


class Boom(Recording):
    description = "Raises"
    input_schema = Text
    output_schema = Echoed

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        raise RuntimeError("exploded on " + inputs["text"])


class Stamp(Recording):
    description = "Takes a datetime (native Python callers may pass a datetime object)"
    input_schema = When
    output_schema = When

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        at = inputs["at"]
        return {"at": at if isinstance(at, datetime) else datetime.fromisoformat(at)}


class Purge(Echo):
    description = "Needs approval"
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)


class SlowAsync(Recording):
    """Waits until its token is set (apcore sets it on timeout too), at most the hang guard."""

    description = "Async, times out after 50 ms"
    input_schema = Wait
    output_schema = Nothing
    resources: ClassVar[dict[str, int]] = {"timeout": 50}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        deadline = time.monotonic() + inputs.get("seconds", HANG_GUARD_S)
        while not context.cancel_token.is_cancelled and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        return {}


class SlowSync(Recording):
    description = "Sync, times out after 50 ms; returns once its token is set"
    input_schema = Wait
    output_schema = Nothing
    resources: ClassVar[dict[str, int]] = {"timeout": 50}

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.contexts.append(context)
        deadline = time.monotonic() + inputs.get("seconds", HANG_GUARD_S)
        while not context.cancel_token.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        return {}


MODULES: dict[str, Callable[[], Any]] = {
    "eq.login": Login,
    "eq.measure": Measure,
    "eq.echo": Echo,
    "eq.denied": Echo,
    "eq.bad_output": BadOutput,
    "eq.no_output_schema": NoOutputSchema,
    "eq.no_schemas": NoSchemas,
    "eq.boom": Boom,
    "eq.recover": Boom,
    "eq.stamp": Stamp,
    "eq.purge": Purge,
    "eq.slow_async": SlowAsync,
    "eq.slow_sync": SlowSync,
}


def make_registry() -> Registry:
    registry = Registry()
    for module_id, factory in MODULES.items():
        registry.register(module_id, factory())
    return registry


# -- middleware --------------------------------------------------------------------------------------


class Recorder(Middleware):  # type: ignore[misc]  # apcore ships no type information
    """Records each hook with what it saw, including the context's redacted captures."""

    def __init__(self, name: str, log: list[Any]) -> None:
        super().__init__()
        self.name, self.log = name, log

    def before(self, module_id: str, inputs: dict[str, Any], context: Any) -> None:
        self.log.append((self.name, "before", module_id, copy.deepcopy(inputs), _captures(context)))

    def after(self, module_id: str, inputs: dict[str, Any], output: dict[str, Any], context: Any) -> None:
        self.log.append((self.name, "after", module_id, copy.deepcopy(output), _captures(context)))

    def on_error(self, module_id: str, inputs: dict[str, Any], error: Exception, context: Any) -> None:
        self.log.append((self.name, "on_error", module_id, describe_error(error), _captures(context)))


class Rewriter(Middleware):  # type: ignore[misc]  # apcore ships no type information
    """Changes inputs before and outputs after; recovers the errors of ``eq.recover``."""

    def before(self, module_id: str, inputs: dict[str, Any], context: Any) -> dict[str, Any] | None:
        return {**inputs, "text": inputs["text"].upper()} if isinstance(inputs.get("text"), str) else None

    def after(self, module_id: str, inputs: dict[str, Any], output: dict[str, Any], context: Any) -> dict[str, Any]:
        return {**output, "rewritten": True}

    def on_error(self, module_id: str, inputs: dict[str, Any], error: Exception, context: Any) -> dict[str, Any] | None:
        return {"recovered": getattr(error, "code", None)} if module_id == "eq.recover" else None


def _captures(context: Any) -> tuple[Any, Any]:
    return copy.deepcopy(context.redacted_inputs), copy.deepcopy(context.redacted_output)


def describe_error(error: BaseException) -> dict[str, Any]:
    """Everything a caller can see of an error, minus what differs per call (trace id, time)."""
    to_dict = getattr(error, "to_dict", None)
    described = to_dict() if callable(to_dict) else {"message": str(error)}
    described.pop("trace_id", None)
    described.pop("timestamp", None)
    return {"type": type(error).__name__, "str": str(error), **described}


# -- the two executors -----------------------------------------------------------------------------------

Setup = Literal["plain", "governed", "denying", "regex"]
SETUPS: tuple[Setup, ...] = ("plain", "governed", "denying", "regex")


@dataclass
class Side:
    """One executor (standard or fast) over its own registry, with its middleware log."""

    executor: Executor
    registry: Registry
    log: list[Any] = field(default_factory=list)

    def module(self, module_id: str) -> Any:
        return self.registry.get(module_id)


def make_side(setup: Setup, *, fast: bool) -> Side:
    registry = make_registry()
    log: list[Any] = []
    acl = ACL(
        [
            ACLRule(callers=["*"], targets=["eq.denied"], effect="deny"),
            ACLRule(callers=["*"], targets=["*"], effect="allow"),
        ],
        default_effect="deny",
    )
    kwargs: dict[str, Any] = {}
    if setup in ("governed", "denying"):
        kwargs = {
            "acl": acl,
            "middlewares": [Recorder("A", log), Recorder("B", log), Rewriter()],
            "approval_handler": AutoApproveHandler() if setup == "governed" else AlwaysDenyHandler(),
        }
    elif setup == "regex":
        redaction = {"regex_patterns": ["tok-[a-z]+", "^4111"], "replacement": "[gone]"}
        kwargs = {"config": Config(data={"obs": {"redaction": redaction}}), "middlewares": [Recorder("A", log)]}
    executor = Executor(registry, **kwargs)
    if fast:
        install_pipeline(executor, sync_workers=4)
    return Side(executor, registry, log)


@dataclass
class Outcome:
    result: Any
    error: dict[str, Any] | None
    captures: tuple[Any, Any] | None
    log: list[Any]


async def outcome(side: Side, module_id: str, inputs: dict[str, Any]) -> Outcome:
    """Call once; what came back, the captures left on the module's context, the middleware log."""
    side.log.clear()
    module = side.module(module_id)
    contexts: list[Any] = module.contexts if module is not None else []
    contexts.clear()
    result: Any = None
    error = None
    try:
        result = await side.executor.call_async(module_id, copy.deepcopy(inputs), Context.create())
    except Exception as exc:
        error = describe_error(exc)
    captures = _captures(contexts[-1]) if contexts else None
    return Outcome(result, error, captures, list(side.log))
