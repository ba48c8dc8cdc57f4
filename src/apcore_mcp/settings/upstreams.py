"""Upstream MCP servers mounted as tools: the ``mcp.json`` file, how its servers run, which toolset ``/mcp`` serves."""

from __future__ import annotations

from dataclasses import dataclass

from apcore_mcp.settings.option import SettingError, as_tuple, check_whole, option, set_field

TOOL_MODES: tuple[str, ...] = ("list", "search")
TOOLSETS_PREFIX = "/toolsets"
"""Under it, each toolset of ``mcp_config`` but the main one has its endpoint: ``/toolsets/<name>/mcp``."""
OLD_TOOLSETS_PREFIX = "/scopes"
"""The deprecated old prefix of the toolset endpoints (they were called scopes); it redirects."""
SOURCES = ("mcp_config", "from_openapi")
"""The settings naming upstream servers to mount: either one is enough."""
MOUNTING = (
    *SOURCES,
    "toolset",
    "upstreams",
    "strict_upstreams",
    "upstream_log_dir",
    "upstream_max_message_bytes",
    "pins",
    "pins_accept_new",
    "auth_pins_scope",
)
"""The settings of mounting upstream servers: ``SOURCES`` and those meaning something only under one of them."""


@dataclass(frozen=True, kw_only=True)
class UpstreamSettings:
    mcp_config: str | None = option(
        None,
        "Claude-style `mcp.json` (`mcpServers`, optional `toolsets`) of upstream MCP servers to mount as tools",
        group="upstreams",
        env="CONFIG",
        metavar="FILE",
    )
    from_openapi: tuple[str, ...] = option(
        (),
        "OpenAPI 3 documents (URL or file) whose operations are mounted as tools, each a server named "
        "`NAME` when given as `NAME=URL_OR_FILE` (see docs/openapi.md); repeatable",
        group="upstreams",
        kind="list",
        metavar="[NAME=]URL_OR_FILE",
    )
    upstreams: bool = option(
        True,
        "start the upstream servers of `--mcp-config` (when off, none starts and a toolset naming servers fails)",
        group="upstreams",
        kind="bool",
    )
    strict_upstreams: bool = option(
        False,
        "a server with a missing `${VAR}` or that fails to start stops the start-up (default: WARNING, skipped)",
        group="upstreams",
        kind="bool",
    )
    upstream_log_dir: str | None = option(
        None,
        "directory receiving each stdio upstream server's stderr as `<name>.log`",
        group="upstreams",
        metavar="DIR",
    )
    upstream_max_message_bytes: int = option(
        16 * 1024 * 1024,
        "largest message read from an upstream server; a larger one fails its call and restarts the server",
        group="upstreams",
        kind="int",
    )
    tool_mode: str = option(
        "list",
        "`list` serves every tool; `search` serves `search_tools`, `describe_tool` and `invoke_tool` over them "
        "(a toolset's `toolMode` overrides it)",
        group="upstreams",
        kind="choice",
        choices=TOOL_MODES,
    )
    toolset: str | None = option(
        None,
        "the config toolset served at `/mcp` (the others at `/toolsets/<name>/mcp`)",
        group="upstreams",
        default_text="`default` (every server, every local module, unless the file defines it)",
        old_names=("scope",),
    )
    pins: str | None = option(
        None,
        "the pins file of the upstream tools (see docs/upstreams.md, Pinned tools and the CI gate)",
        group="upstreams",
        default_text="`<config stem>.pins.json` beside `--mcp-config`",
        metavar="FILE",
    )
    pins_accept_new: bool = option(
        False,
        "serve (and pin, where the pins file is writable) a new tool of an already pinned upstream at first "
        "sight, instead of holding it until `apcore-mcp pins approve`",
        group="upstreams",
        kind="bool",
    )
    auth_pins_scope: str = option(
        "mcp:pins",
        "scope a token needs to approve a held upstream tool in the explorer (`POST /admin/pins/approve`,"
        " served only with auth on)",
        group="upstreams",
        metavar="SCOPE",
    )


def mounts_upstreams(s: UpstreamSettings) -> bool:
    """Whether the settings name upstream servers to mount (an ``mcp_config``, ``from_openapi`` documents)."""
    return s.mcp_config is not None or bool(s.from_openapi)


def check_upstreams(s: UpstreamSettings) -> None:
    for what in ("mcp_config", "upstream_log_dir", "toolset", "pins"):
        value = getattr(s, what)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise SettingError(what, f"{what} must not be empty")
    for what in ("upstreams", "strict_upstreams", "pins_accept_new"):
        if not isinstance(getattr(s, what), bool):
            raise SettingError(what, f"{what} must be true or false, got {getattr(s, what)!r}")
    if not isinstance(s.auth_pins_scope, str) or not s.auth_pins_scope or any(c.isspace() for c in s.auth_pins_scope):
        raise SettingError("auth_pins_scope", "auth_pins_scope must be one scope: a single word")
    set_field(s, "from_openapi", as_tuple(s.from_openapi, "from_openapi"))
    if any(not isinstance(item, str) or not item.strip() for item in s.from_openapi):
        raise SettingError("from_openapi", "from_openapi entries must be non-empty strings")
    check_whole(s, "upstream_max_message_bytes", 1024)
    if s.tool_mode not in TOOL_MODES:
        raise SettingError("tool_mode", f"tool_mode must be one of: {', '.join(TOOL_MODES)}, got {s.tool_mode!r}")
