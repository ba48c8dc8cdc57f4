"""Reading a YAML or JSON document with the path of every value, so a bad field is named exactly.

``Field(value, "script.yaml", "tools[2].responses[0].content")`` wraps one value; its typed
getters raise ``DocumentError("script.yaml: tools[2].responses[0].content: expected a list")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pydantic
import yaml

M = TypeVar("M", bound=pydantic.BaseModel)


class DocumentError(ValueError):
    """A document that cannot be used; the message names the file and the field."""


def load_yaml(path: Path) -> Field:
    """The document at ``path`` as a ``Field`` (its root).

    Raises:
        DocumentError: unreadable file or invalid YAML (with its line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise DocumentError(f"{path}: invalid YAML{where}: {getattr(exc, 'problem', None) or exc}") from exc
    return Field(value, str(path), "")


@dataclass(frozen=True)
class Field:
    """One value of a document and where it sits."""

    value: Any
    source: str
    path: str

    def fail(self, problem: str) -> DocumentError:
        return DocumentError(f"{self.source}: {self.path or '(top level)'}: {problem}")

    def child(self, key: str | int) -> Field:
        if isinstance(key, int):
            return Field(self.value[key], self.source, f"{self.path}[{key}]")
        return Field(self.value.get(key) if isinstance(self.value, dict) else None, self.source, self._join(key))

    def _join(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    @property
    def present(self) -> bool:
        return self.value is not None

    def mapping(self, allowed: frozenset[str] | None = None, *, required: tuple[str, ...] = ()) -> Field:
        """This field, checked to be a mapping with only ``allowed`` keys and every ``required`` one."""
        if not isinstance(self.value, dict):
            raise self.fail(f"expected a mapping, got {_kind(self.value)}")
        for key in self.value:
            if not isinstance(key, str):
                raise self.fail(f"keys must be strings, got {key!r}")
            if allowed is not None and key not in allowed:
                raise self._child_path(key).fail(f"unknown field (expected one of: {', '.join(sorted(allowed))})")
        for key in required:
            if self.value.get(key) is None:
                raise self._child_path(key).fail("required field is missing")
        return self

    def _child_path(self, key: str) -> Field:
        return Field(None, self.source, self._join(key))

    def items(self) -> Iterator[tuple[str, Field]]:
        for key in self.mapping().value:
            yield key, self.child(key)

    def elements(self) -> Iterator[Field]:
        if not isinstance(self.value, list):
            raise self.fail(f"expected a list, got {_kind(self.value)}")
        for index in range(len(self.value)):
            yield self.child(index)

    def string(self, default: str | None = None) -> str:
        if self.value is None and default is not None:
            return default
        if not isinstance(self.value, str) or not self.value:
            raise self.fail(f"expected a non-empty string, got {_kind(self.value)}")
        return self.value

    def optional_string(self) -> str | None:
        return None if self.value is None else self.string()

    def boolean(self, default: bool = False) -> bool:
        if self.value is None:
            return default
        if not isinstance(self.value, bool):
            raise self.fail(f"expected true or false, got {_kind(self.value)}")
        return self.value

    def number(self, default: float | None = None, *, minimum: float | None = None) -> float:
        value = default if self.value is None else self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"expected a number, got {_kind(self.value)}")
        if minimum is not None and value < minimum:
            raise self.fail(f"must be >= {minimum}, got {value}")
        return float(value)

    def integer(self, default: int | None = None) -> int:
        value = default if self.value is None else self.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"expected an integer, got {_kind(self.value)}")
        return value

    def string_list(self) -> list[str]:
        if isinstance(self.value, str):
            return [self.string()]
        return [item.string() for item in self.elements()]

    def model(self, model: type[M]) -> M:
        """The value validated as ``model`` (an MCP type); unknown keys are an error, not dropped."""
        self.mapping(_model_keys(model))
        try:
            return model.model_validate(self.value)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = self
            for part in first["loc"]:
                step = f"{where.path}[{part}]" if isinstance(part, int) else where._join(str(part))
                where = Field(None, self.source, step)
            raise where.fail(first["msg"]) from None


def _model_keys(model: type[pydantic.BaseModel]) -> frozenset[str]:
    """Field names and their wire aliases: YAML may use either spelling."""
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.add(name)
        if info.alias:
            keys.add(info.alias)
    return frozenset(keys)


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
