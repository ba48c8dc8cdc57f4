"""The parsed form of ``mcp.json``: frozen server and toolset specs, and how problems are reported."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apcore_mcp.upstream.expand import Redactor

TRANSPORTS = ("stdio", "http", "sse")
OPENAPI = "openapi"
"""The transport of an ``openapi`` entry: an HTTP API's operations as tools (``upstream.openapi``)."""
TRANSPORT_ALIASES = {"streamable-http": "http", "streamablehttp": "http", "streamable_http": "http"}
SHARING = ("shared", "per-principal", "per-session")
PROTOCOLS = ("auto", "legacy")
TOOL_MODES = ("list", "search")
DEFAULT_TOOLSET = "default"
DEFAULT_TIMEOUT = 30.0
ALL = "all"

SERVER_KEYS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "transport", "type", "timeout", "enabled", "sharing"}
    | {"aliases", "protocol", "description", "openapi", "baseUrl", "operations", "auth", "pin"}
)
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # noqa: S105 - a type name (RFC 8693)
TOOLSET_KEYS = frozenset({"servers", "modules", "toolMode", "description"})


@dataclass(frozen=True)
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class UpstreamConfigError(ValueError):
    """The config file is unusable; ``problems`` lists every mistake, each naming its place."""

    def __init__(self, problems: Sequence[Problem], source: str = "mcp config") -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{lines}")


@dataclass(frozen=True, repr=False)
class TokenExchangeSpec:
    """An entry's ``auth``: call the upstream as the caller, by token exchange (RFC 8693) at ``token_endpoint``.

    Placeholders are expanded. ``audience`` ``None`` means the server's ``url``. Its ``repr``
    shows no value (the client secret above all).
    """

    token_endpoint: str
    audience: str | None = None
    resource: str | None = None
    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    subject_token_type: str = ACCESS_TOKEN_TYPE
    requested_token_type: str | None = None

    def __repr__(self) -> str:
        return "TokenExchangeSpec(***)"


@dataclass(frozen=True, repr=False)
class ServerSpec:
    """One upstream server, with ``${VAR}`` already expanded. Its ``repr`` shows no value."""

    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    sharing: str = "shared"
    aliases: tuple[str, ...] = ()
    protocol: str = "auto"
    description: str = ""
    openapi: str | None = None
    """An ``openapi`` entry's document: an http(s) URL or an absolute file path."""
    base_url: str | None = None
    """An ``openapi`` entry's ``baseUrl`` (``None``: the document's first ``servers`` URL)."""
    operations: tuple[str, ...] | None = None
    """An ``openapi`` entry's operationIds to mount (``None``: every operation)."""
    token_exchange: TokenExchangeSpec | None = None
    """A url entry's ``auth``: each caller's calls carry a token exchanged for theirs (``upstream.token_exchange``)."""
    pin: bool = True
    """Whether its tools are held to their pins (``"pin": false`` turns that off, with a WARNING at mount)."""
    bearer: str | None = field(default=None, compare=False)
    """The exchanged token one caller's connection sends as ``Authorization`` (never from the config, never
    in ``key``: the handle key names that caller's token by a fingerprint instead)."""

    @property
    def is_remote(self) -> bool:
        return self.transport != "stdio"

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes the running server: equal keys share one process or connection."""
        if self.transport == OPENAPI:
            return (self.name, OPENAPI, self.openapi, self.base_url, self.headers, self.operations)
        if self.is_remote:
            return (self.name, self.transport, self.url, self.headers, self.protocol, self.token_exchange)
        return (self.name, "stdio", self.command, self.args, self.env, self.cwd, self.protocol)

    def __repr__(self) -> str:
        return f"ServerSpec(name={self.name!r}, transport={self.transport!r})"


@dataclass(frozen=True)
class ToolsetSpec:
    """A named view: which upstream servers and which local modules it serves, and how."""

    name: str
    servers: tuple[str, ...]
    modules: bool = True
    tags: tuple[str, ...] | None = None
    prefix: str | None = None
    tool_mode: str | None = None
    implicit: bool = False
    """Made up because the file names no such toolset (the default toolset: every server)."""


@dataclass(frozen=True)
class UpstreamConfig:
    servers: Mapping[str, ServerSpec] = field(default_factory=dict)
    """Enabled servers whose placeholders all resolved."""
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Servers left out, with the reason (disabled, a missing variable)."""
    toolsets: Mapping[str, ToolsetSpec] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)

    def toolset(self, name: str = DEFAULT_TOOLSET) -> ToolsetSpec:
        """The named toolset; the default toolset (every server, every local module) when not in the file.

        Raises:
            KeyError: for an unknown toolset name other than the default.
        """
        if name in self.toolsets:
            return self.toolsets[name]
        if name == DEFAULT_TOOLSET:
            return ToolsetSpec(DEFAULT_TOOLSET, servers=tuple(self.servers), implicit=True)
        raise KeyError(f"Unknown toolset {name!r}; the config defines: {', '.join(sorted(self.toolsets)) or 'none'}")


def resolve_selection(
    selection: str | Sequence[str], names: Sequence[str], aliases: Mapping[str, Sequence[str]]
) -> tuple[list[str], list[str]]:
    """``(server names, unknown entries)`` for ``all``, names, aliases, or a comma-separated string of them."""
    entries = selection.split(",") if isinstance(selection, str) else list(selection)
    found: list[str] = []
    unknown: list[str] = []
    for entry in (item.strip() for item in entries):
        if not entry:
            continue
        if entry == ALL:
            targets: Sequence[str] = names
        elif entry in names:
            targets = [entry]
        elif entry in aliases:
            targets = aliases[entry]
        else:
            unknown.append(entry)
            continue
        found += [target for target in targets if target not in found]
    return found, unknown
