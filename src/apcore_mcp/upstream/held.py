"""Telling the bridge's ``HeldTools`` (``calls/held.py``) which of a server's tools its pins hold.

Each source reports after its pins judged its listed tools, by the module ids the tools would
have were they served, so a call naming one finds it; and drops its entry when it is unmounted.
"""

from __future__ import annotations

from collections.abc import Iterable

from apcore_mcp.calls.held import HeldTools
from apcore_mcp.upstream.names import module_ids
from apcore_mcp.upstream.pins.keeper import PinKeeper


def report_held(
    held: HeldTools | None, pins: PinKeeper | None, server: str, segment: str, listed: Iterable[str]
) -> None:
    """``server``'s held tools into ``held``; ``listed``: every tool name it lists, served or held."""
    if held is None:
        return
    states = {}
    if pins is not None:
        # A held relayed skill (``kind`` "skill") is not a tool: a call cannot name it.
        states = {h.tool: h.state for h in pins.held() if h.server == server and getattr(h, "kind", "tool") == "tool"}
    ids = module_ids(segment, list(listed))
    held.put(server, {ids[name]: state for name, state in states.items() if name in ids})
