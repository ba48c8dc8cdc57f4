"""The small Protocols the bridge is typed against.

The catalog reads modules through a ``ModuleSource`` (what an apcore ``Registry`` offers),
the call path runs them through a ``ModuleInvoker`` (what an apcore ``Executor`` offers).
Upstream MCP servers and test servers plug in behind the same two shapes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from apcore import Executor, Registry

RegistryOrExecutor: TypeAlias = "Registry | Executor"


@runtime_checkable
class ModuleSource(Protocol):
    """Where tool definitions come from: a module list, descriptors, and change events."""

    def list(
        self, tags: Sequence[str] | None = None, prefix: str | None = None
    ) -> list[str]: ...  # pragma: no cover - a Protocol

    def get_definition(self, module_id: str) -> Any: ...  # pragma: no cover

    def on(self, event: str, callback: Callable[[str, Any], None]) -> None: ...  # pragma: no cover

    def off(self, event: str, callback: Callable[[str, Any], None]) -> None: ...  # pragma: no cover


@runtime_checkable
class ModuleInvoker(Protocol):
    """What runs a call: apcore's ``Executor`` (ACL, approval, validation, middleware, timeouts)."""

    @property
    def registry(self) -> Any: ...  # pragma: no cover

    async def call_async(
        self, module_id: str, inputs: dict[str, Any] | None = None, context: Any = None
    ) -> dict[str, Any]: ...  # pragma: no cover

    def stream(
        self, module_id: str, inputs: dict[str, Any] | None = None, context: Any = None
    ) -> AsyncIterator[dict[str, Any]]: ...  # pragma: no cover
