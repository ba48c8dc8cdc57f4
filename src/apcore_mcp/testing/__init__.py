"""Testing MCP with apcore-mcp: start servers for tests, script a server's answers, declare cases.

- ``mcp_server`` fixture (pytest plugin, installed with ``apcore-mcp[testing]``) and
  ``start_server()`` for use without pytest, in memory (the default: in the test's own process)
  or as a process on stdio, Streamable HTTP or SSE;
- ``apcore_server()``, ``scripted_server()``, ``command_server()``: how to start a server;
- the scripted server: ``python -m apcore_mcp.testing.scripted SCRIPT.yaml``;
- declarative ``*.mcp.yaml`` cases, collected by the plugin.
"""

from __future__ import annotations

from apcore_mcp.testing.fields import DocumentError
from apcore_mcp.testing.harness import (
    RunningServer,
    ServerCommand,
    ServerNotReady,
    apcore_server,
    command_server,
    free_port,
    is_running,
    remote_server,
    scripted_server,
    start_server,
    stop_process_group,
)
from apcore_mcp.testing.scripted.queues import TEST_CASE_META, encode_responses

__all__ = [
    "TEST_CASE_META",
    "DocumentError",
    "RunningServer",
    "ServerCommand",
    "ServerNotReady",
    "apcore_server",
    "command_server",
    "encode_responses",
    "free_port",
    "is_running",
    "remote_server",
    "scripted_server",
    "start_server",
    "stop_process_group",
]
