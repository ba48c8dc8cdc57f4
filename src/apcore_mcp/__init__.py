"""apcore-mcp: serve an apcore module registry as MCP tools and OpenAI tool definitions.

Public API: ``serve``, ``MCPServer``, ``create_app``, ``Settings``, ``to_openai_tools``,
``normalize_tool_name`` / ``denormalize_tool_name`` / ``openai_names`` and ``from_openai_call``
(a model's tool call back to a module id and arguments); for module code, ``report_progress``,
``elicit``, ``sample``, ``list_roots``, ``request_inputs``, ``log_message`` and the content
types ``Text``, ``Image``, ``Audio``, ``EmbeddedResource``, ``ResourceLink``; for your own
Executor, ``MCPApprovalHandler`` and ``install_pipeline``.
"""

from __future__ import annotations

from apcore_mcp._version import __version__
from apcore_mcp.approval import MCPApprovalHandler
from apcore_mcp.content import Audio, EmbeddedResource, Image, ResourceLink, Text
from apcore_mcp.context import (
    MCP_ELICIT_KEY,
    MCP_PROGRESS_KEY,
    CallContext,
    call_context,
    elicit,
    list_roots,
    log_message,
    release_stream,
    report_progress,
    request_inputs,
    sample,
)
from apcore_mcp.http.app import create_app
from apcore_mcp.openai import (
    denormalize_tool_name,
    from_openai_call,
    normalize_tool_name,
    openai_names,
    to_openai_tools,
)
from apcore_mcp.pipeline import build_executor, close_pipeline, install_pipeline
from apcore_mcp.run.background import MCPServer
from apcore_mcp.run.serve import serve
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.module import JsonSchemaModel, json_schema_model

__all__ = [
    "MCP_ELICIT_KEY",
    "MCP_PROGRESS_KEY",
    "Audio",
    "CallContext",
    "EmbeddedResource",
    "Image",
    "JsonSchemaModel",
    "MCPApprovalHandler",
    "MCPServer",
    "ResourceLink",
    "Settings",
    "Text",
    "__version__",
    "build_executor",
    "call_context",
    "close_pipeline",
    "create_app",
    "denormalize_tool_name",
    "elicit",
    "from_openai_call",
    "install_pipeline",
    "json_schema_model",
    "list_roots",
    "log_message",
    "normalize_tool_name",
    "openai_names",
    "release_stream",
    "report_progress",
    "request_inputs",
    "sample",
    "serve",
    "to_openai_tools",
]
