"""Which held upstream tools a bridge's router may name (``calls/held.py``): those its catalog would serve.

A held tool is not in the registry, so the catalog's own filters cannot be asked about it; its
server is known. A toolset's selection serves every tool of its servers, so the tool would be
served there when its server is one of them. A filter the bridge cannot judge without the module
(``tags``, a caller's own ``include``) fails closed: the tool is answered as absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apcore_mcp.calls.held import HeldTool
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.toolsets import ToolsetSelection


def held_shown(settings: Settings, filters: Iterable[Callable[[str], bool] | None]) -> Callable[[HeldTool], bool]:
    """The predicate ``CallRouter(held_shown=...)`` for a catalog built with ``settings`` and ``filters``."""
    given = [f for f in filters if f is not None]
    selections = [f for f in given if isinstance(f, ToolsetSelection)]
    judged = len(selections) == len(given) and not settings.tags

    def shown(tool: HeldTool) -> bool:
        if not judged or (settings.prefix is not None and not tool.name.startswith(settings.prefix)):
            return False
        return all(tool.server in selection.toolset.servers for selection in selections)

    return shown
