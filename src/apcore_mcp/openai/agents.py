"""The Agents API's ``tools`` (``POST /agents``, ``OpenAI-Beta: agents=v1``) in its two forms.

``functions``: every module a function tool with ``defer_loading: true``, plus one ``tool_search``
tool that loads them into the model's context when needed. ``mcp``: one ``mcp`` tool pointing
at this server over HTTP, its ``allowed_tools`` the MCP tool names given (an empty list allows
none: it is never left out, which would allow every tool the server lists).

The Agents API defines no ``strict`` key on a function tool: with strict mode asked for, a
function gets the strict form of its schema where it fits (as in the other formats), and
nothing more is said in the tool itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from apcore_mcp.openai.formats import OpenAIFunction

AgentsForm = Literal["functions", "mcp"]
AGENTS_FORMS: tuple[AgentsForm, ...] = ("functions", "mcp")
MAX_AGENTS_TOOLS_BYTES = 3 * 1024 * 1024
"""The Agents API refuses a tool list over 3 MiB (3,145,728 bytes) of compact UTF-8 JSON."""
DEFAULT_SERVER_LABEL = "apcore-mcp"
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_MAX_LABEL = 64  # our cap: a label names the server in the model's tool calls


@dataclass(frozen=True, slots=True)
class AgentsOptions:
    """Which Agents form, and for ``mcp`` where the server is and what it is called.

    ``server_url`` is the MCP endpoint as the Agents API reaches it (``https://host/mcp``);
    ``server_label`` names it in tool calls.
    """

    form: str = "functions"
    server_url: str | None = None
    server_label: str = DEFAULT_SERVER_LABEL

    def __post_init__(self) -> None:
        if self.form not in AGENTS_FORMS:
            raise ValueError(f"agents_form must be one of {', '.join(AGENTS_FORMS)}, got {self.form!r}")
        if not isinstance(self.server_label, str) or not self.server_label:
            raise ValueError("server_label must not be empty")
        if self.server_url is None:
            if self.form == "mcp":
                raise ValueError("agents_form 'mcp' needs server_url, the MCP endpoint the Agents API connects to")
            return
        parts = urlsplit(self.server_url) if isinstance(self.server_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"server_url must be an http(s) URL, got {self.server_url!r}")
        if self.form != "mcp":
            raise ValueError("server_url exists only with agents_form 'mcp'")


def check_agents(format: str, agents: AgentsOptions, *, strict: bool, embed_annotations: bool) -> None:
    """Raise ``ValueError`` for Agents options given with another format, or function options with ``mcp``."""
    if format != "agents":
        if agents != AgentsOptions():
            raise ValueError("agents_form, server_url and server_label exist only in format 'agents'")
        return
    if agents.form == "mcp" and (strict or embed_annotations):
        raise ValueError("strict and embed_annotations apply to function tools, not to agents_form 'mcp'")


def server_label(name: str) -> str:
    """A server name as an Agents ``server_label``: ``[A-Za-z0-9_-]``, at most 64 characters."""
    label = _LABEL_UNSAFE.sub("_", name).strip("_")[:_MAX_LABEL]
    return label or DEFAULT_SERVER_LABEL


def to_agents_function(function: OpenAIFunction) -> dict[str, Any]:
    """``{"type": "function", name, description, parameters, "defer_loading": true}``."""
    return {
        "type": "function",
        "name": function.name,
        "description": function.description,
        "parameters": function.parameters,
        "defer_loading": True,
    }


def to_agents_tools(
    functions: Sequence[OpenAIFunction], tool_names: Iterable[str], options: AgentsOptions
) -> list[dict[str, Any]]:
    """The ``tools`` of an Agents request: ``functions`` deferred plus ``tool_search``, or one
    ``mcp`` tool allowing ``tool_names`` (the MCP names, module ids as ``tools/list`` gives them).

    Raises:
        ValueError: the list is over the Agents API's 3 MiB (the message names its size).
    """
    if options.form == "mcp":
        assert options.server_url is not None  # AgentsOptions refuses mcp without one
        transport = {"type": "http", "server_url": options.server_url}
        tools = [
            {
                "type": "mcp",
                "server_label": options.server_label,
                "transport": transport,
                "allowed_tools": list(tool_names),
            }
        ]
    else:
        tools = [to_agents_function(function) for function in functions]
        if tools:
            tools.append({"type": "tool_search"})
    check_agents_size(tools)
    return tools


def agents_size(tools: list[dict[str, Any]]) -> int:
    """Bytes of ``tools`` as compact UTF-8 JSON, the way the Agents API counts them."""
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode())


def check_agents_size(tools: list[dict[str, Any]]) -> None:
    """Raise ``ValueError`` naming the size of a list over ``MAX_AGENTS_TOOLS_BYTES`` (never cut silently)."""
    size = agents_size(tools)
    if size > MAX_AGENTS_TOOLS_BYTES:
        raise ValueError(
            f"The Agents tool list is {size} bytes of JSON, over the Agents API's limit of "
            f"{MAX_AGENTS_TOOLS_BYTES} bytes (3 MiB): narrow it with tags or prefix, or use the 'mcp' form"
        )
