"""FR-OPENAI: OpenAI tool definitions from a real apcore Registry or Executor."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import pytest
from apcore import Executor, ModuleAnnotations, Registry
from pydantic import BaseModel, ConfigDict, Field

from apcore_mcp.openai import denormalize_tool_name, normalize_tool_name, to_openai_tools
from apcore_mcp.tools.schema import to_input_schema

from tests._support.modules import Cycle, module_of, walk

# -- modules ------------------------------------------------------------------------------------------


class Fit(StrEnum):
    COVER = "cover"
    CONTAIN = "contain"


class Size(BaseModel):
    width: int
    height: int | None = None


class ResizeIn(BaseModel):
    url: str = Field(description="Image URL", json_schema_extra={"x-internal": "yes"})
    size: Size
    fit: Fit = Fit.COVER
    quality: int = Field(default=80, ge=1, le=100)
    mode: Literal["fast", "slow"] = "fast"
    crops: list[Size] = []
    backup: Size | None = None
    labels: dict[str, str] = {}


class Out(BaseModel):
    ok: bool


class CropIn(BaseModel):
    x: int


class OpenIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


def ok(**_: Any) -> dict[str, bool]:
    return {"ok": True}


def make_registry() -> Registry:
    registry = Registry()
    resize = module_of(
        ok,
        input=ResizeIn,
        output=Out,
        description="Resize an image",
        tags=["image", "public"],
        annotations=ModuleAnnotations(readonly=True, idempotent=True),
    )
    registry.register("image.resize", resize)
    registry.register(
        "image.crop",
        module_of(
            ok, input=CropIn, output=Out, description="Crop an image", tags=["image"], annotations=ModuleAnnotations()
        ),
    )
    registry.register("text.echo", module_of(ok, input=CropIn, output=Out, description="Echo text", tags=["public"]))
    return registry


def by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {tool["function"]["name"]: tool for tool in tools}


# -- structure -----------------------------------------------------------------------------------------


def test_tool_structure_for_registry() -> None:
    registry = make_registry()
    tools = to_openai_tools(registry)
    assert [tool["function"]["name"] for tool in tools] == ["image-crop", "image-resize", "text-echo"]
    resize = by_name(tools)["image-resize"]
    assert resize == {
        "type": "function",
        "function": {
            "name": "image-resize",
            "description": "Resize an image",
            "parameters": to_input_schema(registry.get_definition("image.resize").input_schema),
        },
    }


def test_empty_registry_gives_empty_list() -> None:
    assert to_openai_tools(Registry()) == []


def test_executor_gives_same_result_as_registry() -> None:
    registry = make_registry()
    assert to_openai_tools(Executor(registry)) == to_openai_tools(registry)
    assert to_openai_tools(Executor(registry), strict=True, embed_annotations=True) == to_openai_tools(
        registry, strict=True, embed_annotations=True
    )


@pytest.mark.parametrize("source", [{}, None, "registry", 42])
def test_other_sources_raise_type_error(source: Any) -> None:
    with pytest.raises(TypeError, match=f"^Expected Registry or Executor instance, got {type(source).__name__}$"):
        to_openai_tools(source)


def test_non_strict_parameters_equal_inlined_input_schema() -> None:
    registry = make_registry()
    tools = by_name(to_openai_tools(registry, strict=False))
    for module_id in ("image.resize", "image.crop", "text.echo"):
        function = tools[normalize_tool_name(module_id)]["function"]
        assert "strict" not in function
        assert function["parameters"] == to_input_schema(registry.get_definition(module_id).input_schema)
    params = tools["image-resize"]["function"]["parameters"]
    assert params["properties"]["quality"]["default"] == 80
    assert params["properties"]["url"]["x-internal"] == "yes"
    assert "$ref" not in json.dumps(params)


# -- names ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module_id", "name"),
    [
        ("a.b.c", "a-b-c"),
        ("image.resize", "image-resize"),
        ("simple", "simple"),
        ("comfyui.workflow.execute", "comfyui-workflow-execute"),
        ("my_module.resize", "my_module-resize"),
    ],
)
def test_name_normalization_round_trip(module_id: str, name: str) -> None:
    assert normalize_tool_name(module_id) == name
    assert denormalize_tool_name(name) == module_id


@pytest.mark.parametrize("module_id", ["my-x", "my-module.resize"])
def test_hyphenated_id_is_rejected(module_id: str) -> None:
    with pytest.raises(ValueError, match="-"):
        normalize_tool_name(module_id)


# -- strict mode -----------------------------------------------------------------------------------------


def admits_null(prop: dict[str, Any]) -> bool:
    kind = prop.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(branch.get("type") == "null" for branch in prop.get("anyOf", []) + prop.get("oneOf", []))


def is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def check_strict(strict_node: Any, loose_node: Any) -> int:
    """Assert the strict rules on ``strict_node`` (against the non-strict original); count objects."""
    if isinstance(strict_node, list):
        return sum(check_strict(s, lo) for s, lo in zip(strict_node, loose_node, strict=True))
    if not isinstance(strict_node, dict):
        return 0
    assert "default" not in strict_node
    assert not any(key.startswith("x-") for key in strict_node)
    count = 0
    if is_object(strict_node):
        count = 1
        assert strict_node["additionalProperties"] is False
        props = strict_node.get("properties", {})
        assert strict_node["required"] == list(props)
        originally_required = set(loose_node.get("required", []))
        for name, prop in props.items():
            loose_prop = loose_node["properties"][name]
            if name not in originally_required:
                assert admits_null(prop), f"optional property {name!r} is not nullable: {prop}"
                if "enum" in prop:
                    assert None in prop["enum"]
            if "anyOf" in prop and "anyOf" not in loose_prop:
                # wrapped as anyOf [original, null]: compare the first branch with the original
                count += check_strict(prop["anyOf"][0], loose_prop)
            else:
                count += check_strict(prop, loose_prop)
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in strict_node:
            count += check_strict(strict_node[key], loose_node[key])
    if isinstance(strict_node.get("additionalProperties"), dict):
        count += check_strict(strict_node["additionalProperties"], loose_node["additionalProperties"])
    return count


def test_strict_mode_rules_hold_everywhere() -> None:
    registry = make_registry()
    loose = by_name(to_openai_tools(registry))
    strict = by_name(to_openai_tools(registry, strict=True))
    assert set(strict) == set(loose)
    for name, tool in strict.items():
        assert tool["function"]["strict"] is True
        params = tool["function"]["parameters"]
        objects = check_strict(params, loose[name]["function"]["parameters"])
        assert objects >= 1
        assert not any(
            isinstance(n, dict) and ("default" in n or any(k.startswith("x-") for k in n)) for n in walk(params)
        )
    # root, size, crops.items, backup's Size branch and the labels map: every object closed
    assert (
        check_strict(strict["image-resize"]["function"]["parameters"], loose["image-resize"]["function"]["parameters"])
        == 5
    )


def test_strict_mode_exact_properties() -> None:
    params = by_name(to_openai_tools(make_registry(), strict=True))["image-resize"]["function"]["parameters"]
    props = params["properties"]
    assert params["required"] == ["url", "size", "fit", "quality", "mode", "crops", "backup", "labels"]
    assert params["additionalProperties"] is False
    assert props["url"] == {"type": "string", "title": "Url", "description": "Image URL"}
    size = {
        "type": "object",
        "title": "Size",
        "properties": {
            "width": {"type": "integer", "title": "Width"},
            "height": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Height"},
        },
        "required": ["width", "height"],
        "additionalProperties": False,
    }
    assert props["size"] == size
    assert props["quality"] == {"type": ["integer", "null"], "title": "Quality", "minimum": 1, "maximum": 100}
    assert props["mode"] == {"type": ["string", "null"], "title": "Mode", "enum": ["fast", "slow", None]}
    assert props["fit"]["type"] == ["string", "null"]
    assert props["fit"]["enum"] == ["cover", "contain", None]
    assert props["crops"] == {"type": ["array", "null"], "title": "Crops", "items": size}
    assert props["backup"] == {"anyOf": [size, {"type": "null"}]}
    assert props["labels"]["type"] == ["object", "null"]
    assert props["labels"]["additionalProperties"] is False


def test_strict_mode_warns_when_closing_an_open_object(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    registry.register("open.tool", module_of(ok, input=OpenIn, output=Out, description="Accepts extra keys"))
    with caplog.at_level(logging.WARNING, logger="apcore_mcp"):
        tools = to_openai_tools(registry, strict=True)
    assert tools[0]["function"]["parameters"]["additionalProperties"] is False
    assert any(r.levelno == logging.WARNING and "open.tool" in r.getMessage() for r in caplog.records)


def test_strict_false_has_no_strict_key_anywhere() -> None:
    for tool in to_openai_tools(make_registry()):
        assert set(tool) == {"type", "function"}
        assert set(tool["function"]) == {"name", "description", "parameters"}


# -- annotations in descriptions ------------------------------------------------------------------


def test_embed_annotations_only_for_non_default_annotations() -> None:
    tools = by_name(to_openai_tools(make_registry(), embed_annotations=True))
    assert tools["image-resize"]["function"]["description"] == (
        "Resize an image\n\n[Annotations: readonly=true, idempotent=true]"
    )
    assert tools["image-crop"]["function"]["description"] == "Crop an image"  # all defaults
    assert tools["text-echo"]["function"]["description"] == "Echo text"  # no annotations


def test_descriptions_unchanged_without_embed_annotations() -> None:
    tools = by_name(to_openai_tools(make_registry()))
    assert tools["image-resize"]["function"]["description"] == "Resize an image"


# -- filters --------------------------------------------------------------------------------------


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_tag_filter_requires_all_tags() -> None:
    registry = make_registry()
    assert names(to_openai_tools(registry, tags=["image"])) == ["image-crop", "image-resize"]
    assert names(to_openai_tools(registry, tags=["public"])) == ["image-resize", "text-echo"]
    assert names(to_openai_tools(registry, tags=["image", "public"])) == ["image-resize"]
    assert names(to_openai_tools(registry, tags=["nonexistent"])) == []
    assert names(to_openai_tools(registry, tags=[])) == ["image-crop", "image-resize", "text-echo"]


def test_prefix_filter() -> None:
    registry = make_registry()
    assert names(to_openai_tools(registry, prefix="image.")) == ["image-crop", "image-resize"]
    assert names(to_openai_tools(registry, prefix="text")) == ["text-echo"]
    assert names(to_openai_tools(registry, prefix="nonexistent.")) == []


def test_tags_and_prefix_intersect() -> None:
    registry = make_registry()
    assert names(to_openai_tools(registry, tags=["public"], prefix="image.")) == ["image-resize"]
    assert names(to_openai_tools(registry, tags=["public"], prefix="image.c")) == []


@pytest.mark.parametrize("tags", [[""], ["image", ""]])
def test_empty_tag_is_rejected(tags: list[str]) -> None:
    with pytest.raises(ValueError, match="^Tag values must not be empty$"):
        to_openai_tools(make_registry(), tags=tags)


def test_empty_prefix_is_rejected() -> None:
    with pytest.raises(ValueError, match="^prefix must not be empty$"):
        to_openai_tools(make_registry(), prefix="")


# -- plain JSON, no openai import ---------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"strict": True, "embed_annotations": True}])
def test_results_are_plain_json(options: dict[str, Any]) -> None:
    tools = to_openai_tools(make_registry(), **options)
    assert json.loads(json.dumps(tools)) == tools
    for node in walk(tools):
        assert type(node) in (dict, list, str, int, float, bool, type(None))


def test_openai_package_is_never_imported() -> None:
    code = textwrap.dedent(
        """
        import sys
        from apcore_mcp.openai import to_openai_tools
        from tests._support.modules import EXPECTED_TOOLS, make_registry

        tools = to_openai_tools(make_registry(), strict=True, embed_annotations=True)
        assert len(tools) == len(EXPECTED_TOOLS), tools
        assert "openai" not in sys.modules, "openai was imported"
        print("ok")
        """
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# -- a module whose schema cannot be converted ----------------------------------------------------------


def test_circular_schema_module_is_skipped_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    registry = make_registry()
    registry.register("broken.loop", Cycle())
    with caplog.at_level(logging.WARNING, logger="apcore_mcp"):
        tools = to_openai_tools(registry)
    assert names(tools) == ["image-crop", "image-resize", "text-echo"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "broken.loop" in r.getMessage()]
    assert len(warnings) == 1
    assert "A -> B -> A" in warnings[0].getMessage()
