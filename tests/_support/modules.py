"""Modules and registries shared by the tests (also imported by the stdio server script)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from apcore import Executor, ModuleAnnotations, Registry
from apcore.acl import ACL, ACLRule
from apcore.decorator import FunctionModule
from pydantic import BaseModel, Field

from apcore_mcp import MCPApprovalHandler, install_pipeline

from tests._support.interactive import INTERACTIVE_MODULES


def module_of(
    fn: Callable[..., Any],
    *,
    input: type[BaseModel] | None = None,
    output: type[BaseModel] | None = None,
    description: str | None = None,
    documentation: str | None = None,
    tags: list[str] | None = None,
    annotations: ModuleAnnotations | None = None,
    timeout_ms: int | None = None,
) -> FunctionModule:
    """An apcore module that runs ``fn`` (sync or async) with the call's inputs as keyword arguments.

    apcore's own ``FunctionModule`` (what ``@module`` builds), unregistered: schemas are the given
    models, or apcore's from ``fn``'s signature; the description is ``fn``'s docstring unless given;
    ``context`` is passed when ``fn`` takes it; ``timeout_ms`` sets the module's declared timeout.
    """
    made = FunctionModule(
        fn,
        module_id=fn.__name__,
        description=description,
        documentation=documentation,
        tags=tags,
        input_schema=input,
        output_schema=output,
    )
    made.annotations = annotations
    if timeout_ms is not None:
        made.resources = {"timeout": timeout_ms}
    return made


class EchoIn(BaseModel):
    text: str = Field(description="What to echo")
    times: int = Field(default=1, ge=1, le=5)


class EchoOut(BaseModel):
    echo: str


class Echo:
    description = "Echo the text back"
    documentation = "Echo repeats `text` `times` times."
    input_schema = EchoIn
    output_schema = EchoOut
    tags = ["public"]
    annotations = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": " ".join([inputs["text"]] * inputs.get("times", 1))}


class Point(BaseModel):
    x: int
    y: int


class PathIn(BaseModel):
    start: Point
    stops: list[Point] = []


class PathLength:
    description = "Count the points of a path"
    input_schema = PathIn
    output_schema = EchoOut
    tags = ["public"]

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": str(1 + len(inputs.get("stops", [])))}


class Empty(BaseModel):
    pass


class Boom:
    description = "Always fails with an internal error"
    input_schema = Empty
    output_schema = Empty

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("secret /etc/passwd token=abc123")


class SlowIn(BaseModel):
    seconds: float = 1.0


class Slow:
    description = "Sleeps past its 100 ms timeout"
    input_schema = SlowIn
    output_schema = Empty
    resources = {"timeout": 100}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await asyncio.sleep(inputs.get("seconds", 1.0))
        return {}


class Wait:
    description = "Sleeps for a while, then answers"
    input_schema = SlowIn
    output_schema = EchoOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        await asyncio.sleep(inputs.get("seconds", 1.0))
        return {"echo": "done"}


class Values:
    description = "Returns values JSON cannot encode natively"
    input_schema = Empty

    class Out(BaseModel):
        when: datetime
        id: uuid.UUID
        path: Path
        raw: bytes

    output_schema = Out

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {
            "when": datetime(2026, 1, 2, 3, 4, 5),
            "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
            "path": Path("/srv/data"),
            "raw": b"xy",
        }


class Secret:
    description = "Only for admins"
    input_schema = Empty
    output_schema = EchoOut
    tags = ["admin"]
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": "secret"}


def walk(node: Any) -> list[Any]:
    """Every dict and list in ``node``, depth first."""
    found = [node]
    if isinstance(node, dict):
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for value in node:
            found += walk(value)
    return found


class CircularSchema:
    """A schema whose definitions refer to each other: it cannot be inlined."""

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
            },
        }


class Cycle:
    description = "Its input schema is circular: the server must skip it"
    input_schema = CircularSchema
    output_schema = Empty

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {}


class Registering:
    """Registers ``demo.added`` (or unregisters it) from inside a call, on a worker thread."""

    description = "Adds or removes the module demo.added"
    input_schema = EchoIn
    output_schema = EchoOut

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        if inputs["text"] == "remove":
            self.registry.unregister("demo.added")
        else:
            self.registry.register("demo.added", Echo())
        return {"echo": inputs["text"]}


def make_registry() -> Registry:
    registry = Registry()
    registry.register("demo.echo", Echo())
    registry.register("demo.path", PathLength())
    registry.register("demo.boom", Boom())
    registry.register("demo.slow", Slow())
    registry.register("demo.wait", Wait())
    registry.register("demo.values", Values())
    registry.register("demo.denied", Echo())
    registry.register("admin.secret", Secret())
    registry.register("demo.cycle", Cycle())
    registry.register("demo.register", Registering(registry))
    for module_id, module_class in INTERACTIVE_MODULES.items():
        registry.register(module_id, module_class())
    return registry


def make_executor(registry: Registry | None = None) -> Executor:
    """A user's Executor: an ACL denying ``demo.denied`` to external callers, plus the two documented
    one-liners (our approval handler; the fast, cancellable pipeline)."""
    acl = ACL(
        [
            ACLRule(callers=["*"], targets=["demo.denied"], effect="deny"),
            ACLRule(callers=["*"], targets=["*"], effect="allow"),
        ],
        default_effect="deny",
    )
    executor = Executor(registry or make_registry(), acl=acl, approval_handler=MCPApprovalHandler())
    return install_pipeline(executor)


EXPECTED_TOOLS = sorted(
    [
        "demo.echo",
        "demo.path",
        "demo.boom",
        "demo.slow",
        "demo.wait",
        "demo.values",
        "demo.denied",
        "admin.secret",
        "demo.register",
        *INTERACTIVE_MODULES,
    ]
)


class RegionIn(BaseModel):
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})
    text: str


class RegionOut(BaseModel):
    region: str
    text: str


class Routed:
    description = "Echo, routed by region (its region argument is mirrored in Mcp-Param-Region)"
    input_schema = RegionIn
    output_schema = RegionOut

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"region": inputs["region"], "text": inputs["text"]}
