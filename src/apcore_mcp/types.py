"""The types the bridge is typed against.

``RegistryOrExecutor`` is what every public entry point serves (``serve``, ``BackgroundServer``,
``create_app``, ``to_openai_tools``); the call path runs modules through a ``ModuleInvoker``
(what an apcore ``Executor`` offers). ``JSONValue`` is plain JSON data (what ``json.loads``
returns), for schemas, arguments and outputs once they are decoded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeAlias, runtime_checkable

from apcore import Context, Executor, Registry

JSONValue: TypeAlias = "dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None"
"""Plain JSON data. Objects stay ``dict[str, Any]`` where code reads their keys (the usual case)."""

RegistryOrExecutor: TypeAlias = Registry | Executor
"""An apcore ``Registry`` (served through our pipeline) or a user's ``Executor`` (used as it is)."""


def registry_of(registry_or_executor: Registry | Executor) -> Registry:
    """The Registry behind a Registry or an Executor.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(registry_or_executor, Executor):
        return registry_or_executor.registry
    if isinstance(registry_or_executor, Registry):
        return registry_or_executor
    raise TypeError(f"Expected Registry or Executor instance, got {type(registry_or_executor).__name__}")


@runtime_checkable
class ModuleInvoker(Protocol):
    """What runs a call: apcore's ``Executor`` (ACL, approval, validation, middleware, timeouts)."""

    @property
    def registry(self) -> Registry: ...  # pragma: no cover

    async def call_async(
        self, module_id: str, inputs: dict[str, Any] | None = None, context: Context | None = None
    ) -> dict[str, Any]: ...  # pragma: no cover

    def stream(
        self, module_id: str, inputs: dict[str, Any] | None = None, context: Context | None = None
    ) -> AsyncIterator[dict[str, Any]]: ...  # pragma: no cover
