"""apcore-mcp: serve an apcore module registry as MCP tools and OpenAI tool definitions.

Public API: ``serve``, ``BackgroundServer``, ``create_app``, ``Settings``, ``to_openai_tools``,
``normalize_tool_name`` / ``denormalize_tool_name`` / ``openai_names`` and ``from_openai_call``
(a model's tool call back to a module id and arguments); for module code, ``report_progress``,
``elicit``, ``sample``, ``list_roots``, ``request_inputs``, ``log_message`` and the content
types ``Text``, ``Image``, ``Audio``, ``EmbeddedResource``, ``ResourceLink``; for your own
Executor, ``MCPApprovalHandler`` and ``install_pipeline``. The setting keywords of ``serve``
and ``BackgroundServer`` are typed by ``SettingsOptions``; ``RegistryOrExecutor`` is what they serve.

``__all__`` is the public API, locked by ``tests/project/test_public_types.py``. ``MCPServer`` is the
deprecated old name of ``BackgroundServer`` (it clashed with the MCP SDK's ``MCPServer``): it
still works for one release, with a ``DeprecationWarning``, and is not in ``__all__``.

The public names are imported on first use, not with the package: ``apcore-mcp --help`` and
``apcore_mcp.settings`` load no server (Starlette, uvicorn, the MCP SDK's server).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

from apcore_mcp._version import __version__

if TYPE_CHECKING:
    from apcore_mcp.calls.approval import MCPApprovalHandler
    from apcore_mcp.calls.context import (
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
    from apcore_mcp.run.background import BackgroundServer
    from apcore_mcp.run.hooks import StartupHookError
    from apcore_mcp.run.serve import serve
    from apcore_mcp.settings import Settings, SettingsOptions
    from apcore_mcp.tools.content import Audio, EmbeddedResource, Image, ResourceLink, Text
    from apcore_mcp.tools.views import View
    from apcore_mcp.types import RegistryOrExecutor
    from apcore_mcp.upstream.module import JsonSchemaModel, json_schema_model

__all__ = [
    "MCP_ELICIT_KEY",
    "MCP_PROGRESS_KEY",
    "Audio",
    "BackgroundServer",
    "CallContext",
    "EmbeddedResource",
    "Image",
    "JsonSchemaModel",
    "MCPApprovalHandler",
    "RegistryOrExecutor",
    "ResourceLink",
    "Settings",
    "SettingsOptions",
    "StartupHookError",
    "Text",
    "View",
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

_HOMES = {
    "MCP_ELICIT_KEY": "apcore_mcp.calls.context",
    "MCP_PROGRESS_KEY": "apcore_mcp.calls.context",
    "Audio": "apcore_mcp.tools.content",
    "BackgroundServer": "apcore_mcp.run.background",
    "CallContext": "apcore_mcp.calls.context",
    "EmbeddedResource": "apcore_mcp.tools.content",
    "Image": "apcore_mcp.tools.content",
    "JsonSchemaModel": "apcore_mcp.upstream.module",
    "MCPApprovalHandler": "apcore_mcp.calls.approval",
    "RegistryOrExecutor": "apcore_mcp.types",
    "ResourceLink": "apcore_mcp.tools.content",
    "Settings": "apcore_mcp.settings",
    "SettingsOptions": "apcore_mcp.settings",
    "StartupHookError": "apcore_mcp.run.hooks",
    "Text": "apcore_mcp.tools.content",
    "View": "apcore_mcp.tools.views",
    "build_executor": "apcore_mcp.pipeline",
    "call_context": "apcore_mcp.calls.context",
    "close_pipeline": "apcore_mcp.pipeline",
    "create_app": "apcore_mcp.http.app",
    "denormalize_tool_name": "apcore_mcp.openai",
    "elicit": "apcore_mcp.calls.context",
    "from_openai_call": "apcore_mcp.openai",
    "install_pipeline": "apcore_mcp.pipeline",
    "json_schema_model": "apcore_mcp.upstream.module",
    "list_roots": "apcore_mcp.calls.context",
    "log_message": "apcore_mcp.calls.context",
    "normalize_tool_name": "apcore_mcp.openai",
    "openai_names": "apcore_mcp.openai",
    "release_stream": "apcore_mcp.calls.context",
    "report_progress": "apcore_mcp.calls.context",
    "request_inputs": "apcore_mcp.calls.context",
    "sample": "apcore_mcp.calls.context",
    "serve": "apcore_mcp.run.serve",
    "to_openai_tools": "apcore_mcp.openai",
}
"""The module of each public name, imported when the name is first used (see the module doc)."""

if TYPE_CHECKING:
    from typing_extensions import deprecated

    @deprecated("apcore_mcp.MCPServer is renamed BackgroundServer")
    class MCPServer(BackgroundServer):
        """Deprecated: the old name of ``BackgroundServer``."""

else:

    def __getattr__(name: str) -> object:
        if name == "MCPServer":
            warnings.warn(
                "apcore_mcp.MCPServer is renamed BackgroundServer (it clashed with the MCP SDK's MCPServer); "
                "the old name goes in the next release",
                DeprecationWarning,
                stacklevel=2,
            )
            return __getattr__("BackgroundServer")
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # once: the next use is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_HOMES})
