"""OpenAI function names: module ids mapped to ``[a-zA-Z0-9_-]{1,64}`` and back."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

MAX_NAME_LENGTH = 64
"""OpenAI's limit on a function name."""
SHORTENED_MARK = "--"
"""Separates a shortened name from its hash; never in a plain name (module id segments are never empty)."""
_HASH_LENGTH = 10


def normalize_tool_name(module_id: str) -> str:
    """``image.resize`` -> ``image-resize``: OpenAI names allow ``[a-zA-Z0-9_-]`` and at most 64 characters.

    An id whose name would be longer keeps its first 52 characters, then ``--`` and 10 hex
    digits of its SHA-256: deterministic, unique in practice, and mapped back by a lookup
    (``openai_names``, ``from_openai_call``), not by ``denormalize_tool_name``.

    Raises:
        ValueError: if the id already holds a ``-``, which would make the mapping ambiguous.
    """
    if "-" in module_id:
        raise ValueError(f"Module id must not contain '-': {module_id!r} (reserved for OpenAI names)")
    name = module_id.replace(".", "-")
    if len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(module_id.encode()).hexdigest()[:_HASH_LENGTH]
    return name[: MAX_NAME_LENGTH - len(SHORTENED_MARK) - _HASH_LENGTH] + SHORTENED_MARK + digest


def denormalize_tool_name(name: str) -> str:
    """The module id behind an OpenAI function name: ``image-resize`` -> ``image.resize``.

    Raises:
        ValueError: ``name`` was shortened (an id over 64 characters): resolve it with
            ``openai_names`` or ``from_openai_call``, which know the ids.
    """
    if SHORTENED_MARK in name:
        raise ValueError(f"{name!r} is a shortened name; look it up with openai_names() or from_openai_call()")
    return name.replace("-", ".")


def openai_names(module_ids: Iterable[str]) -> dict[str, str]:
    """``{OpenAI name: module id}`` for ``module_ids`` (ids holding ``-`` have no name and are left out).

    Raises:
        ValueError: two ids map to the same name (a hash collision: never seen, but never silent).
    """
    names: dict[str, str] = {}
    for module_id in module_ids:
        if "-" in module_id:
            continue
        name = normalize_tool_name(module_id)
        if names.setdefault(name, module_id) != module_id:
            raise ValueError(f"Modules {names[name]!r} and {module_id!r} have the same OpenAI name {name!r}")
    return names
