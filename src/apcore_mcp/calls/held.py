"""Tools held from their pins: the names a call may be told about instead of "Module not found".

An upstream tool whose definition drifted from its pin (or a new one not yet approved) is not
served (``upstream/pins``). A call naming it is answered with a tool error that names the drift,
so the caller learns an operator must approve it, but only where the caller could see the tool
were it served (the router asks the same scope rules and its own selection); elsewhere the answer
is the absent tool's, word for word (the hidden-tool rule, ``calls/authorization.py``).

``HeldTools`` is built once by the bridge and handed to its routers; the upstream runtime fills
it as its servers' tools are judged, and empties a server's entry when it is unmounted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from apcore_mcp.calls.errors import SafeError

APPROVE_HINT = "an operator must approve it (apcore-mcp pins approve)"
_REASONS = {
    "changed": "its definition changed since it was pinned",
    "new": "it is new and not yet pinned",
    "unpinned": "it has no pin and the pins file is read-only here",
    "unpinnable": "its definition cannot be pinned",
}


@dataclass(frozen=True, slots=True)
class HeldTool:
    """One held tool: its module id, the upstream server it comes from, and why it is held (a keeper state)."""

    name: str
    server: str
    state: str


class HeldTools:
    """Module id -> ``HeldTool``, by server: a dict with a few verbs, guarded by one lock."""

    def __init__(self) -> None:
        self._by_server: dict[str, dict[str, HeldTool]] = {}
        self._lock = threading.Lock()

    def put(self, server: str, states: Mapping[str, str]) -> None:
        """``server``'s held tools are now ``states`` (module id -> keeper state), replacing the last ones."""
        entries = {name: HeldTool(name, server, state) for name, state in states.items()}
        with self._lock:
            if entries:
                self._by_server[server] = entries
            else:
                self._by_server.pop(server, None)

    def drop(self, server: str) -> None:
        """``server`` is unmounted: nothing of it is held."""
        self.put(server, {})

    def get(self, name: str) -> HeldTool | None:
        with self._lock:
            for entries in self._by_server.values():
                if name in entries:
                    return entries[name]
        return None


def held_error(tool: HeldTool) -> SafeError:
    """The tool error of a call to a held tool the caller could see: it names the drift, never a hash.

    Its kind is ``not_found`` (the tool is not served; edges and metrics treat it as such), its words differ.
    """
    reason = _REASONS.get(tool.state, "it is held from its pin")
    return SafeError("not_found", f"Tool {tool.name} is held: {reason}; {APPROVE_HINT}")
