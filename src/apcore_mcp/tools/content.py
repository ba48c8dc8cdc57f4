"""Rich results: content blocks a module can return, and how an output becomes what a client sees.

A module declares content in its output schema with the types here (``Text``, ``Image``,
``Audio``, ``EmbeddedResource``, ``ResourceLink``, or a list of them), so apcore's output
validation still applies::

    class Out(BaseModel):
        chart: Image
        mean: float

    return {"chart": Image.from_bytes(png, "image/png"), "mean": 4.2}

Such fields become MCP content blocks in declaration order; the other fields are the
structured result (``structuredContent`` and a JSON text block). The advertised output
schema is the declared one without the content fields.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticSerializationError, to_jsonable_python

from apcore_mcp.types import JSONValue

MCP_RESULT_KEY = "_mcp_result"
"""An output holding a whole MCP tool result under this key (an upstream tool's) is passed on as it is."""
CONTENT_MARK = "x-mcp-content"
"""Schema keyword marking a content-block type (kept in the schemas the tool model reads)."""

_SURROGATES = re.compile("[\ud800-\udfff]")


class _Block(BaseModel):
    kind: ClassVar[str]
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, frozen=True)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Text(_Block):
    """A text content block."""

    kind = "text"
    model_config = ConfigDict(json_schema_extra={CONTENT_MARK: "text"})
    type: Literal["text"] = "text"
    text: str


class Image(_Block):
    """An image content block (``data`` is base64)."""

    kind = "image"
    model_config = ConfigDict(json_schema_extra={CONTENT_MARK: "image"})
    type: Literal["image"] = "image"
    data: str
    mime_type: str = Field(alias="mimeType")

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> Image:
        return cls(data=base64.b64encode(data).decode("ascii"), mimeType=mime_type)


class Audio(_Block):
    """An audio content block (``data`` is base64)."""

    kind = "audio"
    model_config = ConfigDict(json_schema_extra={CONTENT_MARK: "audio"})
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str = Field(alias="mimeType")

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> Audio:
        return cls(data=base64.b64encode(data).decode("ascii"), mimeType=mime_type)


class ResourceContents(BaseModel):
    """The body of an embedded resource: ``text`` or base64 ``blob``."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, frozen=True)
    uri: str
    mime_type: str | None = Field(default=None, alias="mimeType")
    text: str | None = None
    blob: str | None = None


class EmbeddedResource(_Block):
    """A resource embedded in the result."""

    kind = "resource"
    model_config = ConfigDict(json_schema_extra={CONTENT_MARK: "resource"})
    type: Literal["resource"] = "resource"
    resource: ResourceContents

    @classmethod
    def text_resource(cls, uri: str, text: str, mime_type: str = "text/plain") -> EmbeddedResource:
        return cls(resource=ResourceContents(uri=uri, mimeType=mime_type, text=text))

    @classmethod
    def blob_resource(cls, uri: str, data: bytes, mime_type: str) -> EmbeddedResource:
        blob = base64.b64encode(data).decode("ascii")
        return cls(resource=ResourceContents(uri=uri, mimeType=mime_type, blob=blob))


class ResourceLink(_Block):
    """A link to a resource the client may read."""

    kind = "resource_link"
    model_config = ConfigDict(json_schema_extra={CONTENT_MARK: "resource_link"})
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = Field(default=None, alias="mimeType")


CONTENT_TYPES: tuple[type[_Block], ...] = (Text, Image, Audio, EmbeddedResource, ResourceLink)


# -- the output layout of a tool, computed once from its output schema ------------------------


@dataclass(frozen=True, slots=True)
class OutputLayout:
    """Which output fields are content blocks, and the schema of the structured remainder."""

    content_fields: tuple[str, ...]
    structured_schema: dict[str, Any]

    @property
    def structured(self) -> bool:
        return bool(self.structured_schema)


def output_layout(output_schema: dict[str, Any]) -> OutputLayout:
    """Split an (inlined) object output schema into content fields and the structured rest."""
    properties = output_schema.get("properties") if output_schema.get("type") == "object" else None
    if not isinstance(properties, dict):
        return OutputLayout((), output_schema if output_schema.get("type") == "object" else {})
    content = tuple(name for name, prop in properties.items() if _is_content(prop))
    if not content:
        return OutputLayout((), output_schema)
    rest = {name: prop for name, prop in properties.items() if name not in content}
    if not rest:
        return OutputLayout(content, {})
    schema = {**output_schema, "properties": rest}
    if "required" in output_schema:
        schema["required"] = [name for name in output_schema["required"] if name in rest]
    return OutputLayout(content, schema)


def _is_content(prop: object) -> bool:
    if not isinstance(prop, dict):
        return False
    if CONTENT_MARK in prop:
        return True
    if prop.get("type") == "array":
        return _is_content(prop.get("items"))
    branches = [b for b in prop.get("anyOf", ()) if isinstance(b, dict) and b.get("type") != "null"]
    return bool(branches) and all(_is_content(branch) for branch in branches)


# -- rendering an output ----------------------------------------------------------------------


class OutputError(ValueError):
    """A module's output cannot be sent: not JSON-encodable, or too large."""


@dataclass(frozen=True, slots=True)
class RenderedOutput:
    """What a client gets for a successful call."""

    blocks: tuple[dict[str, Any], ...]
    """Content blocks (wire dicts), the JSON text block included."""
    structured: dict[str, Any] | None
    text: str
    """The structured part as JSON text ("" when the output is only content blocks)."""


def to_json_value(value: object) -> JSONValue:
    """Plain JSON data: ISO 8601 dates, UUIDs and paths as strings, models by alias, NaN/inf as null.

    Raises:
        OutputError: a value of a type with no JSON form (never sent as its ``repr``).
    """
    try:
        plain: JSONValue = to_jsonable_python(value, by_alias=True, inf_nan_mode="null", serialize_unknown=False)
    except (PydanticSerializationError, ValueError, RecursionError) as exc:
        raise OutputError(f"output is not JSON-serializable: {type(exc).__name__}") from None
    return plain


def dump_json(value: object, max_bytes: int | None = None) -> str:
    """Compact JSON text of plain data; lone surrogates become U+FFFD (they cannot be sent as UTF-8).

    Raises:
        OutputError: the text exceeds ``max_bytes``.
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if text.isascii():  # the usual case: its size is its length, no surrogate in it, nothing to encode
        size = len(text)
    else:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            text = _SURROGATES.sub("\ufffd", text)
            size = len(text.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        raise OutputError(f"output of {size} bytes exceeds the limit of {max_bytes} bytes")
    return text


CHEAP_NODES = 4096
"""Outputs with more values than this are rendered off the event loop (see ``precheck_size``)."""


def precheck_size(value: object, max_bytes: int | None, nodes: int = CHEAP_NODES) -> bool:
    """Refuse an output that is surely too large before encoding it; tell whether it is cheap to encode.

    Counts a lower bound of the JSON size (each string's characters, each key, quotes and
    brackets: UTF-8 and escapes only add) over at most ``nodes`` values. 100 MB in one string
    is refused here in microseconds instead of after ~0.4 s of encoding on the event loop.

    Returns:
        True when the whole output was counted (few values: encode it inline), False when it
        holds more than ``nodes`` values (encode it on a worker thread).

    Raises:
        OutputError: the lower bound already exceeds ``max_bytes``.
    """
    floor = 0
    stack = [value]
    for _ in range(nodes):
        if not stack:
            return True
        node = stack.pop()
        if isinstance(node, str | bytes):
            floor += len(node) + 2
        elif isinstance(node, dict):
            floor += 2 + sum(len(key) + 3 for key in node if isinstance(key, str))
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            floor += 2 + len(node)
            stack.extend(node)
        else:
            floor += 1
        if max_bytes is not None and floor > max_bytes:
            raise OutputError(f"output of more than {floor} bytes exceeds the limit of {max_bytes} bytes")
    return not stack


def render_output(output: object, layout: OutputLayout, max_bytes: int | None = None) -> RenderedOutput:
    """Content blocks, structured content and text for one module output.

    Raises:
        OutputError: the output cannot be encoded or is over ``max_bytes``.
    """
    plain = to_json_value(output)
    if not isinstance(plain, dict) or not layout.content_fields:
        text = dump_json(plain, max_bytes)
        structured = plain if isinstance(plain, dict) and layout.structured else None
        return RenderedOutput(({"type": "text", "text": text},), _clean(structured, text), text)
    blocks = [block for name in layout.content_fields for block in _blocks(plain.get(name))]
    rest = {name: value for name, value in plain.items() if name not in layout.content_fields}
    text = dump_json(rest, max_bytes) if rest or not blocks else ""
    size = len(text) + sum(len(dump_json(block)) for block in blocks)
    if max_bytes is not None and size > max_bytes:
        raise OutputError(f"output of {size} bytes exceeds the limit of {max_bytes} bytes")
    if text:
        blocks.append({"type": "text", "text": text})
    structured = rest if layout.structured else None
    return RenderedOutput(tuple(blocks), _clean(structured, text), text)


def _blocks(value: JSONValue) -> Iterable[dict[str, Any]]:
    if value is None:
        return ()
    if isinstance(value, list):
        return [item for item in value if isinstance(item, dict)]
    return (value,) if isinstance(value, dict) else ()


def _clean(structured: dict[str, Any] | None, text: str) -> dict[str, Any] | None:
    """The structured part as the client will read it (surrogates replaced as in the text)."""
    if structured is None or "\ufffd" not in text:
        return structured
    cleaned = json.loads(text)
    return cleaned if isinstance(cleaned, dict) else structured
