"""FR-SCHEMA-001/005 and FR-ANNOT: ToolRecord and MCP Tool built from real apcore descriptors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from apcore import ModuleAnnotations, Registry
from pydantic import BaseModel, Field, RootModel

from apcore_mcp.tools.behaviour import to_description_suffix
from apcore_mcp.tools.records import ToolRecord, build_record

from tests._support.modules import module_of


class Point(BaseModel):
    x: int
    y: int


class ResizeIn(BaseModel):
    width: int = Field(description="Target width", ge=1)
    origin: Point


class ResizeOut(BaseModel):
    ok: bool


class Numbers(RootModel[list[int]]):
    pass


def ok(**_: Any) -> dict[str, Any]:
    return {"ok": True}


def resize() -> Any:
    return module_of(
        ok,
        input=ResizeIn,
        output=ResizeOut,
        description="Resize an image",
        documentation="Long docs.",
        tags=["image", "public"],
        annotations=ModuleAnnotations(readonly=True, destructive=True, idempotent=True, open_world=False),
    )


class Plain:
    description = "No annotations, no output schema"
    input_schema = ResizeIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {}


def list_output() -> Any:
    return module_of(ok, input=ResizeIn, output=Numbers, description="Returns a JSON array")


class Streamer:
    description = "Streams and needs approval"
    input_schema = ResizeIn
    output_schema = ResizeOut
    annotations = ModuleAnnotations(requires_approval=True, streaming=True)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"ok": True}

    async def stream(self, inputs: dict[str, Any], context: Any) -> AsyncIterator[dict[str, Any]]:
        yield {"ok": True}


def record_for(module: Any, module_id: str = "image.resize") -> ToolRecord:
    registry = Registry()
    registry.register(module_id, module)
    descriptor = registry.get_definition(module_id)
    assert descriptor is not None
    return build_record(descriptor)


def wire(record: ToolRecord) -> dict[str, Any]:
    return record.mcp_tool.model_dump(by_alias=True, exclude_none=True, mode="json")


INLINED_INPUT = {
    "type": "object",
    "title": "ResizeIn",
    "properties": {
        "width": {"title": "Width", "type": "integer", "description": "Target width", "minimum": 1},
        "origin": {
            "title": "Point",
            "type": "object",
            "properties": {"x": {"title": "X", "type": "integer"}, "y": {"title": "Y", "type": "integer"}},
            "required": ["x", "y"],
        },
    },
    "required": ["width", "origin"],
}

OUTPUT = {
    "type": "object",
    "title": "ResizeOut",
    "properties": {"ok": {"title": "Ok", "type": "boolean"}},
    "required": ["ok"],
}


# -- ToolRecord -----------------------------------------------------------------------------------


def test_record_fields_from_descriptor() -> None:
    record = record_for(resize())
    assert record.name == "image.resize"
    assert record.description == "Resize an image"
    assert record.documentation == "Long docs."
    assert record.tags == ("image", "public")
    assert record.input_schema == INLINED_INPUT
    assert record.output_schema == OUTPUT
    assert record.has_output_schema is True
    assert record.hints == {
        "readOnlyHint": True,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert record.meta == {"apcore/requiresApproval": False, "apcore/streaming": False}
    assert isinstance(record.annotations, ModuleAnnotations)
    assert record.annotations.readonly is True


def test_mcp_tool_rendering() -> None:
    assert wire(record_for(resize())) == {
        "name": "image.resize",
        "description": "Resize an image",
        "inputSchema": INLINED_INPUT,
        "outputSchema": OUTPUT,
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        },
        "_meta": {"apcore/requiresApproval": False, "apcore/streaming": False},
    }


def test_no_ref_in_rendered_tool() -> None:
    assert "$ref" not in str(wire(record_for(resize())))
    assert "$defs" not in str(wire(record_for(resize())))


def test_module_without_annotations_or_output_schema_gets_mcp_defaults() -> None:
    record = record_for(Plain(), "plain")
    tool = wire(record)
    assert record.annotations is None
    assert record.output_schema == {}
    assert record.has_output_schema is False
    assert "outputSchema" not in tool
    assert tool["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert tool["_meta"] == {"apcore/requiresApproval": False, "apcore/streaming": False}
    assert record.tags == ()
    assert record.documentation == ""


def test_non_object_output_schema_is_not_published() -> None:
    record = record_for(list_output(), "numbers")
    assert record.output_schema == {}
    assert "outputSchema" not in wire(record)


def test_requires_approval_and_streaming_go_to_meta() -> None:
    record = record_for(Streamer(), "stream.it")
    tool = wire(record)
    assert tool["_meta"] == {"apcore/requiresApproval": True, "apcore/streaming": True}
    # requires_approval/streaming have no MCP hint: the four hints stay at their defaults.
    assert tool["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }


@pytest.mark.parametrize(
    ("field", "hint"),
    [
        ("readonly", "readOnlyHint"),
        ("destructive", "destructiveHint"),
        ("idempotent", "idempotentHint"),
        ("open_world", "openWorldHint"),
    ],
)
@pytest.mark.parametrize("value", [True, False])
def test_each_annotation_maps_to_its_hint(field: str, hint: str, value: bool) -> None:
    class Annotated:
        description = "x"
        input_schema = ResizeIn
        annotations = ModuleAnnotations(**{field: value})

        def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
            return {}

    record = record_for(Annotated(), "annotated")
    assert record.hints[hint] is value
    assert wire(record)["annotations"][hint] is value
    others = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}
    del others[hint]
    for other, default in others.items():
        assert wire(record)["annotations"][other] is default


# -- OpenAI description suffix (FR-ANNOT-007) ------------------------------------------------------


def test_suffix_for_none_is_empty() -> None:
    assert to_description_suffix(None) == ""


def test_suffix_for_defaults_is_empty() -> None:
    assert to_description_suffix(ModuleAnnotations()) == ""
    # fields outside the five (streaming) do not appear either
    assert to_description_suffix(ModuleAnnotations(streaming=True, cacheable=True)) == ""


def test_suffix_single_field() -> None:
    assert to_description_suffix(ModuleAnnotations(destructive=True)) == "\n\n[Annotations: destructive=true]"
    assert to_description_suffix(ModuleAnnotations(open_world=False)) == "\n\n[Annotations: open_world=false]"


def test_suffix_exact_format_two_fields() -> None:
    suffix = to_description_suffix(ModuleAnnotations(readonly=True, idempotent=True))
    assert suffix == "\n\n[Annotations: readonly=true, idempotent=true]"


def test_suffix_all_five_fields() -> None:
    annotations = ModuleAnnotations(
        readonly=True, destructive=True, idempotent=True, requires_approval=True, open_world=False
    )
    assert to_description_suffix(annotations) == (
        "\n\n[Annotations: readonly=true, destructive=true, idempotent=true, requires_approval=true, open_world=false]"
    )
