"""apcore-mcp: serve an apcore module registry as MCP tools and OpenAI tool definitions.

Public API: ``serve``, ``to_openai_tools``, ``create_app``, ``MCPServer``, ``Settings``,
``normalize_tool_name`` / ``denormalize_tool_name``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from apcore_mcp.http.app import create_app
from apcore_mcp.openai import denormalize_tool_name, normalize_tool_name, to_openai_tools
from apcore_mcp.run.background import MCPServer
from apcore_mcp.run.serve import serve
from apcore_mcp.settings import Settings

__all__ = [
    "MCPServer",
    "Settings",
    "__version__",
    "create_app",
    "denormalize_tool_name",
    "normalize_tool_name",
    "serve",
    "to_openai_tools",
]
