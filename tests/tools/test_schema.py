"""FR-SCHEMA: ``$ref`` inlining and the object root of tool schemas."""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from apcore_mcp.tools.schema import MAX_REF_DEPTH, inline_refs, to_input_schema, to_output_schema

from tests._support.modules import walk


def has_key_anywhere(node: Any, key: str) -> bool:
    return any(isinstance(item, dict) and key in item for item in walk(node))


POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}


# -- inlining ---------------------------------------------------------------------------------


def test_ref_in_property_is_inlined_and_defs_removed() -> None:
    schema = {
        "type": "object",
        "properties": {"start": {"$ref": "#/$defs/Point"}},
        "required": ["start"],
        "$defs": {"Point": POINT},
    }
    assert inline_refs(schema) == {"type": "object", "properties": {"start": POINT}, "required": ["start"]}


def test_legacy_definitions_table_is_resolved_and_removed() -> None:
    schema = {"type": "object", "properties": {"p": {"$ref": "#/definitions/Point"}}, "definitions": {"Point": POINT}}
    assert inline_refs(schema) == {"type": "object", "properties": {"p": POINT}}


def test_ref_in_array_items() -> None:
    schema = {
        "type": "object",
        "properties": {"stops": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
        "$defs": {"Point": POINT},
    }
    assert inline_refs(schema)["properties"]["stops"] == {"type": "array", "items": POINT}


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf", "allOf"])
def test_ref_in_composition_branches(keyword: str) -> None:
    schema = {
        "type": "object",
        "properties": {"v": {keyword: [{"$ref": "#/$defs/Point"}, {"$ref": "#/$defs/Name"}, {"type": "null"}]}},
        "$defs": {"Point": POINT, "Name": {"type": "string", "minLength": 1}},
    }
    assert inline_refs(schema)["properties"]["v"] == {
        keyword: [POINT, {"type": "string", "minLength": 1}, {"type": "null"}]
    }


def test_nested_refs_inside_definitions_are_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {"route": {"$ref": "#/$defs/Route"}},
        "$defs": {
            "Route": {"type": "object", "properties": {"legs": {"type": "array", "items": {"$ref": "#/$defs/Leg"}}}},
            "Leg": {"type": "object", "properties": {"from": {"$ref": "#/$defs/Point"}}},
            "Point": POINT,
        },
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {
            "route": {
                "type": "object",
                "properties": {"legs": {"type": "array", "items": {"type": "object", "properties": {"from": POINT}}}},
            }
        },
    }


def test_same_definition_used_twice_gives_independent_copies() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Point"}, "b": {"$ref": "#/$defs/Point"}},
        "$defs": {"Point": POINT},
    }
    result = inline_refs(schema)
    assert result["properties"]["a"] == result["properties"]["b"] == POINT

    result["properties"]["a"]["properties"]["x"]["type"] = "string"
    result["properties"]["a"]["required"].append("z")

    assert result["properties"]["b"] == POINT
    assert schema["$defs"]["Point"] == POINT


def test_sibling_keywords_beside_ref_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/Point", "description": "Where to start"}},
        "$defs": {"Point": POINT},
    }
    assert inline_refs(schema)["properties"]["p"] == {**POINT, "description": "Where to start"}


def test_input_is_not_mutated() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Point"}, "b": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
        "$defs": {"Point": POINT},
        "definitions": {"Old": {"type": "string"}},
    }
    before = copy.deepcopy(schema)
    inline_refs(schema)
    to_input_schema(schema)
    to_output_schema(schema)
    assert schema == before


def test_schema_without_refs_is_unchanged_except_for_empty_defs() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "$defs": {}}
    assert inline_refs(schema) == {"type": "object", "properties": {"n": {"type": "integer"}}}


# -- errors -----------------------------------------------------------------------------------


def test_circular_reference_names_the_cycle() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }
    with pytest.raises(ValueError, match="A -> B -> A"):
        inline_refs(schema)
    with pytest.raises(ValueError, match="A -> B -> A"):
        to_input_schema(schema)
    with pytest.raises(ValueError, match="A -> B -> A"):
        to_output_schema(schema)


def test_self_reference_is_circular() -> None:
    schema = {"properties": {"n": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {"items": {"$ref": "#/$defs/Node"}}}}
    with pytest.raises(ValueError, match="Node -> Node"):
        inline_refs(schema)


def test_missing_definition_raises_key_error_naming_it() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Ghost"}}, "$defs": {"Point": POINT}}
    with pytest.raises(KeyError, match="Ghost"):
        inline_refs(schema)


def chain_schema(levels: int) -> dict[str, Any]:
    """A root property referencing D1, which references D2, ... down to D{levels} (a string)."""
    defs: dict[str, Any] = {
        f"D{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/D{i + 1}"}}} for i in range(1, levels)
    }
    defs[f"D{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"root": {"$ref": "#/$defs/D1"}}, "$defs": defs}


def test_refs_nested_32_deep_are_resolved() -> None:
    assert MAX_REF_DEPTH == 32
    result = inline_refs(chain_schema(32))
    node = result["properties"]["root"]
    for _ in range(31):
        node = node["properties"]["next"]
    assert node == {"type": "string"}
    assert not has_key_anywhere(result, "$ref")


def test_refs_nested_deeper_than_32_raise_value_error() -> None:
    with pytest.raises(ValueError, match="depth"):
        inline_refs(chain_schema(33))


# -- object root and preservation --------------------------------------------------------------


def test_empty_schema_becomes_empty_object() -> None:
    assert to_input_schema({}) == {"type": "object", "properties": {}}
    assert to_input_schema(None) == {"type": "object", "properties": {}}


def test_missing_root_type_is_added() -> None:
    schema = {"properties": {"n": {"type": "integer"}}, "required": ["n"], "title": "In"}
    assert to_input_schema(schema) == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "title": "In",
    }


def test_object_root_is_kept_as_is() -> None:
    schema = {"type": "object", "properties": {}}
    assert to_input_schema(schema) == {"type": "object", "properties": {}}
    full = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert to_input_schema(full) == full


def test_output_schema_empty_or_none_is_empty_dict() -> None:
    assert to_output_schema({}) == {}
    assert to_output_schema(None) == {}


def test_output_schema_is_inlined() -> None:
    schema = {"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}}, "$defs": {"Point": POINT}}
    assert to_output_schema(schema) == {"type": "object", "properties": {"p": POINT}}


def test_keywords_and_unicode_are_preserved() -> None:
    schema = {
        "type": "object",
        "title": "Réglages ✓",
        "description": "Paramètres — 日本語",
        "properties": {
            "when": {"type": "string", "format": "date-time", "description": "Quand"},
            "mail": {"type": "string", "format": "email"},
            "mode": {"type": "string", "enum": ["fast", "slow", "ünïcode"], "default": "fast"},
            "kind": {"const": "fixed"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1.5, "default": 0.5},
            "flag": {"type": ["boolean", "null"], "default": None},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "extra": {"type": "object", "properties": {"k": {"type": "null"}}},
        },
        "required": ["when"],
    }
    expected = copy.deepcopy(schema)
    assert to_input_schema(schema) == expected
    assert to_output_schema(schema) == expected


def test_sixty_properties_are_preserved_exactly() -> None:
    kinds = ["string", "integer", "number", "boolean", "array", "object"]
    properties: dict[str, Any] = {}
    for i in range(60):
        prop: dict[str, Any] = {"type": kinds[i % 6], "title": f"Field {i}", "description": f"field number {i}"}
        if prop["type"] == "array":
            prop["items"] = {"type": "integer"}
        properties[f"field_{i:02d}"] = prop
    schema = {"type": "object", "title": "Big", "properties": properties, "required": list(properties)[::2]}
    result = to_input_schema(schema)
    assert result == schema
    assert list(result["properties"]) == list(properties)


# -- real pydantic models -------------------------------------------------------------------------


class Color(StrEnum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str = "Paris"


class Person(BaseModel):
    name: str = Field(description="Full name")
    home: Address
    previous: list[Address] = []
    work: Address | None = None
    color: Color = Color.RED
    mode: Literal["a", "b"] = "a"


class Team(BaseModel):
    lead: Person
    members: list[Person]
    backup: Person | None = None


@pytest.mark.parametrize("model", [Person, Team])
def test_pydantic_model_schemas_have_no_refs_left(model: type[BaseModel]) -> None:
    original = model.model_json_schema()
    assert has_key_anywhere(original, "$ref")
    for converted in (to_input_schema(original), to_output_schema(original)):
        assert not has_key_anywhere(converted, "$ref")
        assert "$defs" not in converted
        assert converted["type"] == "object"
        assert set(converted["properties"]) == set(model.model_fields)


def test_pydantic_nested_model_content_is_inlined() -> None:
    result = to_input_schema(Person.model_json_schema())
    address = {
        "type": "object",
        "title": "Address",
        "properties": {
            "street": {"title": "Street", "type": "string"},
            "city": {"title": "City", "type": "string", "default": "Paris"},
        },
        "required": ["street"],
    }
    props = result["properties"]
    assert props["home"] == address
    assert props["previous"]["items"] == address
    assert address in props["work"]["anyOf"]
    assert {"type": "null"} in props["work"]["anyOf"]
    assert props["color"]["enum"] == ["red", "green"]
    assert props["color"]["default"] == "red"
    assert props["mode"]["enum"] == ["a", "b"]
    assert props["name"]["description"] == "Full name"
    assert result["required"] == ["name", "home"]
