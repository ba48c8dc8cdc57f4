"""A scripted MCP server for testing MCP clients: ``python -m apcore_mcp.testing.scripted SCRIPT.yaml``."""

from __future__ import annotations

from apcore_mcp.testing.scripted.queues import TEST_CASE_META, encode_responses
from apcore_mcp.testing.scripted.script import Script, load_script
from apcore_mcp.testing.scripted.server import RequestRecord, build_server

__all__ = ["TEST_CASE_META", "RequestRecord", "Script", "build_server", "encode_responses", "load_script"]
