"""Prompts from a directory of prompt files (``*.yaml``/``*.yml``), one prompt per file.

A file::

    name: summarize            # default: the file name
    description: Summarize a document
    arguments:
      - name: topic
        description: What to summarize
        required: true
        complete: [news, sports, weather]     # completion candidates (optional)
    inputs:                    # asked from the user before rendering (optional)
      audience:
        message: Who is the summary for?
        schema: {type: object, properties: {who: {type: string}}, required: [who]}
    messages:
      - role: user
        text: "Summarize {topic} for {audience.who}."
      - role: user
        image: {file: chart.png, mime_type: image/png}      # or data: <base64>
      - role: assistant
        resource: {uri: "docs://{topic}", mime_type: text/plain, text: "..."}

``{name}`` placeholders take argument values (``{input.field}`` an answered input's field);
``{{`` and ``}}`` are literal braces. Only text is substituted; files are read at load time.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apcore_mcp.types import JSONValue

PROMPT_SUFFIXES = (".yaml", ".yml")
ROLES = ("user", "assistant")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\}")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class PromptFileError(ValueError):
    """A prompt file is malformed; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False
    complete: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PromptInput:
    key: str
    message: str
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str
    kind: str
    """``text``, ``image``, ``audio`` or ``resource``."""
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    inputs: tuple[PromptInput, ...]
    messages: tuple[PromptMessage, ...]
    source: str = field(default="", compare=False)

    def missing_arguments(self, given: Mapping[str, str]) -> list[str]:
        return [arg.name for arg in self.arguments if arg.required and not given.get(arg.name)]

    def render(self, arguments: Mapping[str, str], answers: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Wire ``PromptMessage`` dicts with placeholders filled (unknown names become empty)."""
        values: dict[str, str] = {name: str(value) for name, value in arguments.items()}
        for key, content in answers.items():
            for name, value in content.items():
                values[f"{key}.{name}"] = str(value)
        return [{"role": message.role, "content": _fill(message.body, values)} for message in self.messages]


def substitute(text: str, values: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values.get(match.group(1), "")

    return _PLACEHOLDER.sub(replace, text)


def _fill(body: JSONValue, values: Mapping[str, str]) -> JSONValue:
    if isinstance(body, str):
        return substitute(body, values)
    if isinstance(body, dict):
        return {key: value if key in ("data", "blob") else _fill(value, values) for key, value in body.items()}
    if isinstance(body, list):
        return [_fill(item, values) for item in body]
    return body


def load_prompts(directory: str | Path) -> dict[str, Prompt]:
    """Every prompt file in ``directory`` (not recursive), by prompt name.

    Raises:
        PromptFileError: a file is not valid (the message names the file and the field),
            two files define the same name, or the directory does not exist.
    """
    root = Path(directory)
    if not root.is_dir():
        raise PromptFileError(f"prompts directory does not exist: {root}")
    prompts: dict[str, Prompt] = {}
    for path in sorted(p for p in root.iterdir() if p.suffix in PROMPT_SUFFIXES and not p.name.startswith(".")):
        prompt = parse_prompt_file(path)
        if prompt.name in prompts:
            raise PromptFileError(f"{path}: name: {prompt.name!r} is already defined by {prompts[prompt.name].source}")
        prompts[prompt.name] = prompt
    return prompts


def parse_prompt_file(path: Path) -> Prompt:
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PromptFileError(f"{path}: cannot be read as YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PromptFileError(f"{path}: must be a mapping with 'messages'")
    return _Parser(path).prompt(data)


class _Parser:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> PromptFileError:
        return PromptFileError(f"{self.path}: {where}: {message}")

    def prompt(self, data: dict[str, Any]) -> Prompt:
        unknown = sorted(set(data) - {"name", "description", "arguments", "inputs", "messages"})
        if unknown:
            raise self.fail(unknown[0], "unknown field (known: name, description, arguments, inputs, messages)")
        name = data.get("name", self.path.stem)
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.fail("name", f"must be 1-128 characters of letters, digits, '_', '-', '.', got {name!r}")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise self.fail("description", "must be a string")
        arguments = tuple(self.argument(i, item) for i, item in enumerate(self.list_of(data, "arguments")))
        names = [arg.name for arg in arguments]
        if len(set(names)) != len(names):
            raise self.fail("arguments", "argument names must be unique")
        inputs = tuple(self.input(key, value) for key, value in self.mapping_of(data, "inputs").items())
        messages = tuple(self.message(i, item) for i, item in enumerate(self.list_of(data, "messages")))
        if not messages:
            raise self.fail("messages", "at least one message is required")
        return Prompt(name, description, arguments, inputs, messages, str(self.path))

    def list_of(self, data: dict[str, Any], key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return value

    def mapping_of(self, data: dict[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, "must be a mapping")
        return value

    def argument(self, index: int, item: object) -> PromptArgument:
        where = f"arguments[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise self.fail(where, "must be a mapping with a non-empty 'name'")
        complete = item.get("complete", [])
        if not isinstance(complete, list) or not all(isinstance(value, str) for value in complete):
            raise self.fail(f"{where}.complete", "must be a list of strings")
        return PromptArgument(
            name=item["name"],
            description=str(item.get("description", "")),
            required=bool(item.get("required", False)),
            complete=tuple(complete),
        )

    def input(self, key: str, item: object) -> PromptInput:
        where = f"inputs.{key}"
        if not isinstance(item, dict) or not isinstance(item.get("message"), str):
            raise self.fail(where, "must be a mapping with a 'message' string")
        schema = item.get("schema", {"type": "object", "properties": {}})
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise self.fail(f"{where}.schema", "must be an object schema (type: object)")
        return PromptInput(key, item["message"], schema)

    def message(self, index: int, item: object) -> PromptMessage:
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise self.fail(where, "must be a mapping")
        role = item.get("role", "user")
        if role not in ROLES:
            raise self.fail(f"{where}.role", f"must be one of {', '.join(ROLES)}, got {role!r}")
        kinds = [kind for kind in ("text", "image", "audio", "resource") if kind in item]
        if len(kinds) != 1:
            raise self.fail(where, "needs exactly one of text, image, audio, resource")
        kind = kinds[0]
        value = item[kind]
        if kind == "text":
            if not isinstance(value, str):
                raise self.fail(f"{where}.text", "must be a string")
            return PromptMessage(role, kind, {"type": "text", "text": value})
        if kind in ("image", "audio"):
            return PromptMessage(role, kind, {"type": kind, **self.media(f"{where}.{kind}", value)})
        return PromptMessage(role, kind, {"type": "resource", "resource": self.resource(f"{where}.resource", value)})

    def media(self, where: str, value: object) -> dict[str, str]:
        if not isinstance(value, dict) or not isinstance(value.get("mime_type"), str):
            raise self.fail(where, "must be a mapping with 'mime_type' and one of 'file', 'data'")
        return {"data": self.payload(where, value), "mimeType": value["mime_type"]}

    def payload(self, where: str, value: dict[str, Any]) -> str:
        if ("file" in value) == ("data" in value):
            raise self.fail(where, "needs exactly one of 'file' (relative to the prompt file) or 'data' (base64)")
        if "data" in value:
            data = value["data"]
            if not isinstance(data, str):
                raise self.fail(f"{where}.data", "must be a base64 string")
            try:
                base64.b64decode(data, validate=True)
            except ValueError:
                raise self.fail(f"{where}.data", "is not valid base64") from None
            return data
        file = (self.path.parent / str(value["file"])).resolve()
        if self.path.parent.resolve() not in file.parents:
            raise self.fail(f"{where}.file", "must be inside the prompts directory")
        try:
            return base64.b64encode(file.read_bytes()).decode("ascii")
        except OSError as exc:
            raise self.fail(f"{where}.file", f"cannot be read: {exc.strerror}") from None

    def resource(self, where: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or not isinstance(value.get("uri"), str):
            raise self.fail(where, "must be a mapping with a 'uri'")
        body: dict[str, Any] = {"uri": value["uri"]}
        if isinstance(value.get("mime_type"), str):
            body["mimeType"] = value["mime_type"]
        if "text" in value:
            if not isinstance(value["text"], str):
                raise self.fail(f"{where}.text", "must be a string")
            body["text"] = value["text"]
        else:
            body["blob"] = self.payload(where, value)
        return body


def complete_argument(prompt: Prompt, argument: str, prefix: str) -> list[str]:
    """Completion candidates of a prompt argument that start with ``prefix`` (case-insensitive)."""
    for arg in prompt.arguments:
        if arg.name == argument:
            lowered = prefix.lower()
            return [value for value in arg.complete if value.lower().startswith(lowered)]
    return []
