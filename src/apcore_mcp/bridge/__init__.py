"""One served registry: its wiring (``Bridge``) and its lifetime (``BridgeService``).

This room sits above the MCP edge (``mcp/``), the upstream servers (``upstream/``) and the
replicas (``replicas/``), which it wires together, and below the HTTP app (``http/``) and the
runners (``run/``), which host it:

- ``core.py``: ``Bridge.build`` turns a Registry or Executor and ``Settings`` into the catalog,
  the call router with its one authorization point, the limits and the MCP server, by pure wiring;
- ``service.py``: ``BridgeService``, what lives and dies while a bridge is served, entered once;
- ``upstreams.py``: the upstream MCP servers of ``mcp.json`` while a bridge is served.
"""

from apcore_mcp.bridge.core import Bridge, authorization_for, call_limits, executor_for, main_toolset
from apcore_mcp.bridge.service import BridgeService
from apcore_mcp.types import registry_of

__all__ = [
    "Bridge",
    "BridgeService",
    "authorization_for",
    "call_limits",
    "executor_for",
    "main_toolset",
    "registry_of",
]
