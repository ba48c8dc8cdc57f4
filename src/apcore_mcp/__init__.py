"""apcore-mcp: serve an apcore module registry as MCP tools and OpenAI tool definitions."""

from __future__ import annotations

__version__ = "0.1.0"
