"""Server settings: one frozen, validated object shared by ``serve()``, the CLI and the app factory.

Each field is declared once, with its help text, CLI flag and environment variable (see
``option``); the argument parser (``cli.py``), the environment reader (``env.py``) and the
README's tables are all derived from these declarations.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Unpack

from apcore_mcp._version import __version__
from apcore_mcp.limits import is_loopback_address
from apcore_mcp.options import (
    APPROVAL_MODES,
    AUTH_MODES,
    ENV_PREFIX,
    LOG_LEVELS,
    LOOPBACK_HOSTS,
    MAX_NAME_LENGTH,
    TOOL_MODES,
    TRANSPORTS,
    WILDCARD_HOSTS,
    Kind,
    Option,
    SettingError,
    Transport,
    both_spellings,
    normalize_log_level,
    normalize_transport,
    option,
    warn_renamed,
)
from apcore_mcp.settings_checks import CHECKS, RESERVED_PATHS
from apcore_mcp.settings_options import SettingsOptions

__all__ = [
    "APPROVAL_MODES",
    "AUTH_MODES",
    "ENV_PREFIX",
    "LOG_LEVELS",
    "LOOPBACK_HOSTS",
    "MAX_NAME_LENGTH",
    "RESERVED_PATHS",
    "TOOL_MODES",
    "TRANSPORTS",
    "WILDCARD_HOSTS",
    "Kind",
    "Option",
    "SettingError",
    "Settings",
    "Transport",
    "configure_logging",
    "is_loopback_host",
    "normalize_log_level",
    "normalize_transport",
    "option",
]


@dataclass(frozen=True, kw_only=True)
class SettingsFields:
    """How a server presents, protects and limits itself: the declarations (``Settings`` checks them).

    ``allowed_hosts`` / ``allowed_origins`` extend the Host and Origin allow-lists that
    DNS-rebinding protection starts from (the loopback names, plus ``host`` when it is a
    specific address). Entries are ``name``, ``name:port`` or ``name:*``; a name without a
    port matches any port.
    """

    # -- identity --------------------------------------------------------------------------------
    name: str = option(
        "apcore-mcp", f"server name reported to clients (max {MAX_NAME_LENGTH} characters)", group="identity"
    )
    version: str | None = option(
        None,
        "server version reported to clients",
        group="identity",
        flag="--server-version",
        env="SERVER_VERSION",
        default_text="the package version",
    )
    # -- filters ---------------------------------------------------------------------------------
    tags: tuple[str, ...] | None = option(
        None, "serve only modules carrying all these tags", group="filters", kind="list", metavar="TAG[,TAG]"
    )
    prefix: str | None = option(None, "serve only modules whose id starts with this", group="filters")
    # -- network ---------------------------------------------------------------------------------
    host: str = option(
        "127.0.0.1",
        "address the HTTP transports bind to (an allowed Host; bound off loopback, explorer calls need a token)",
        group="network",
    )
    port: int = option(8000, "port the HTTP transports bind to (1-65535)", group="network", kind="int")
    allowed_hosts: tuple[str, ...] = option(
        (),
        "extra Host values accepted: `name` (any port), `name:port`, `name:*`",
        group="network",
        kind="list",
        metavar="HOST[:PORT]",
    )
    allowed_origins: tuple[str, ...] = option(
        (),
        "extra browser origins accepted, e.g. `https://app.example.com`",
        group="network",
        kind="list",
        metavar="URL",
    )
    forwarded_allow_ips: tuple[str, ...] = option(
        (),
        "proxies (IP addresses or CIDR networks) trusted to name the client in `X-Forwarded-For`/`Forwarded`; "
        "from any other peer those headers are ignored",
        group="network",
        kind="list",
        metavar="IP[,CIDR]",
        default_text="none: the socket peer is the client",
    )
    # -- protocol --------------------------------------------------------------------------------
    dynamic: bool = option(False, "reflect registry changes live (`listChanged`)", group="protocol", kind="bool")
    stateless: bool = option(
        False, "Streamable HTTP without sessions, for several replicas", group="protocol", kind="bool"
    )
    json_response: bool = option(
        False, "answer `POST /mcp` with JSON instead of an SSE stream", group="protocol", kind="bool"
    )
    resumable: bool = option(
        True,
        "keep recent stream events so a handshake-era client whose stream broke resumes with Last-Event-ID "
        "(bounded memory)",
        group="protocol",
        kind="bool",
    )
    sse_retry_ms: int = option(
        1000,
        "reconnection delay suggested to clients of resumable streams, in milliseconds",
        group="protocol",
        kind="int",
    )
    resume_max_bytes: int = option(
        # 48, not 64: the allocator's share on top keeps RSS within 64 MiB of a server keeping nothing.
        48 * 1024 * 1024,
        "bytes of stream events kept for resuming, all streams together; the oldest events go first",
        group="protocol",
        kind="int",
    )
    resume_stream_max_bytes: int = option(
        8 * 1024 * 1024,
        "bytes of events kept for one stream; a client resuming past what was dropped gets an error",
        group="protocol",
        kind="int",
    )
    approval: str = option(
        "elicit",
        "how `requires_approval` modules are confirmed: `elicit` asks the client's user (fails closed); "
        "`auto` runs them unconfirmed (logs a WARNING at start)",
        group="protocol",
        kind="choice",
        choices=APPROVAL_MODES,
    )
    request_state_keys: tuple[str, ...] = option(
        (),
        "secrets (32+ characters each, comma list) sealing 2026-07-28 `requestState`: the first seals, all open; "
        "a random key per process when unset",
        group="protocol",
        kind="list",
        metavar="KEY[,KEY]",
        secret=True,
    )
    input_timeout: float = option(
        300.0,
        "seconds a handshake-era client gets to answer an elicitation, sampling or roots request "
        "(an unanswered approval is a rejection)",
        group="protocol",
        kind="float",
    )
    request_state_ttl: float = option(
        600.0,
        "seconds a 2026-07-28 input-required round stays answerable (its sealed requestState expires after)",
        group="protocol",
        kind="float",
    )
    prompts_dir: str | None = option(
        None, "directory of prompt files (`*.yaml`) served as MCP prompts", group="protocol", metavar="DIR"
    )
    # -- service ---------------------------------------------------------------------------------
    metrics: bool = option(True, "serve `/metrics` (Prometheus)", group="service", kind="bool")
    explorer: bool = option(False, "serve the browser explorer", group="service", kind="bool")
    explorer_prefix: str = option("/explorer", "URL prefix of the explorer", group="service")
    allow_execute: bool = option(
        False, "let the explorer call tools (a token is needed off loopback)", group="service", kind="bool"
    )
    execute_token: str | None = option(
        None,
        "bearer token for explorer calls (16+ characters); when unset and the host is not loopback, "
        "a random one is made and written to a file only its owner reads (the log names the file)",
        group="service",
        secret=True,
    )
    shutdown_timeout: float = option(
        3.0, "seconds calls in flight get to finish on shutdown", group="service", kind="float"
    )
    sync_workers: int = option(
        16,
        "threads running sync modules (a call that timed out or was cancelled frees its slot)",
        group="limits",
        kind="int",
    )
    timeout_ceiling_ms: int | None = option(
        None,
        "upper bound on any module's timeout in milliseconds; the module is cancelled past it",
        group="limits",
        kind="int",
    )
    max_output_bytes: int = option(
        16 * 1024 * 1024,
        "largest tool result sent, in bytes of JSON; a larger one is an error result",
        group="limits",
        kind="int",
    )
    max_body_bytes: int = option(
        4 * 1024 * 1024,
        "largest HTTP request body (chunked too; a larger one is answered 413) and stdio message accepted, in bytes",
        group="limits",
        kind="int",
    )
    header_timeout: float = option(
        10.0,
        "seconds a client gets to send a request's headers (our uvicorn protocol; see the README for plain uvicorn)",
        group="limits",
        kind="float",
    )
    body_timeout: float = option(
        30.0,
        "seconds a client gets to send a whole request body; a slower one is answered 408 and disconnected",
        group="limits",
        kind="float",
    )
    max_sessions: int = option(
        1000,
        "Streamable HTTP sessions open at once (initialized or not); a new one past it is answered 503",
        group="limits",
        kind="int",
    )
    max_sessions_per_caller: int = option(
        100,
        "sessions one caller (its address, or its principal once authenticated) may hold; past it 429",
        group="limits",
        kind="int",
    )
    session_idle_timeout: float = option(
        600.0,
        "seconds a Streamable HTTP session may sit with no request and no open stream before it is closed",
        group="limits",
        kind="float",
    )
    rate_limit: float | None = option(
        None,
        "tool calls per second per caller (token bucket); past it HTTP 429 with `Retry-After`, "
        "JSON-RPC error -32010 in MCP",
        group="limits",
        kind="float",
        default_text="no limit",
    )
    rate_burst: int | None = option(
        None,
        "tool calls a caller may make at once before `rate_limit` applies",
        group="limits",
        kind="int",
        default_text="`rate_limit` rounded up",
    )
    max_concurrent_calls: int | None = option(
        500,
        "tool calls running at once; one more is refused at once (HTTP 503, JSON-RPC error -32011 in MCP)",
        group="limits",
        kind="int",
    )
    max_caller_share: float = option(
        0.5,
        "share of `max_concurrent_calls` one caller may hold (0-1]; past it the same fast refusal",
        group="limits",
        kind="float",
    )
    max_header_bytes: int = option(
        16 * 1024,
        "largest total size of a request's headers, in bytes; a larger one is answered 431",
        group="limits",
        kind="int",
    )
    max_json_depth: int = option(
        64, "deepest nesting of a JSON request body (objects and arrays); deeper is refused", group="limits", kind="int"
    )
    max_json_items: int = option(
        100_000,
        "most keys and elements in a JSON request body, all levels together; more is refused",
        group="limits",
        kind="int",
    )
    log_level: str | None = option(
        None,
        "`DEBUG`, `INFO`, `WARNING` or `ERROR`; logs go to stderr",
        group="service",
        kind="choice",
        choices=LOG_LEVELS,
        default_text="logging untouched (`INFO` on the command line)",
    )

    # -- replicas --------------------------------------------------------------------------------
    redis_url: str | None = option(
        None,
        "Redis shared by the replicas (`redis://`, `rediss://` or `unix://`; needs `apcore-mcp[redis]`); "
        "without it every replica keeps its state to itself",
        group="replicas",
        metavar="URL",
        secret=True,
    )
    redis_prefix: str = option(
        "apcore-mcp:", "prefix of the Redis keys and channels this service uses", group="replicas"
    )
    broadcast_changes: bool = option(
        False,
        "publish registry changes on Redis so the clients of every replica hear `list_changed` "
        "(needs `redis_url` and `dynamic`)",
        group="replicas",
        kind="bool",
    )

    # -- auth ------------------------------------------------------------------------------------
    auth: str = option(
        "none",
        "who may call over HTTP: `none`, `jwt` (OAuth bearer tokens) or `api-key` (static keys); "
        "`/health` and `/ready` stay open",
        group="auth",
        kind="choice",
        choices=AUTH_MODES,
    )
    public_url: str | None = option(
        None,
        "the server's base URL as clients reach it, with any proxy path prefix (`https://example.com/sub`); "
        "resource URLs and the default audience derive from it",
        group="auth",
        metavar="URL",
        default_text="`http://HOST:PORT` (required with auth on a wildcard host)",
    )
    auth_issuer: str | None = option(None, "required `iss` of tokens (`jwt`)", group="auth", metavar="URL")
    auth_audience: tuple[str, ...] = option(
        (),
        "accepted `aud` values (`jwt`)",
        group="auth",
        kind="list",
        metavar="AUD",
        default_text="each endpoint's own resource URL, e.g. `PUBLIC_URL/mcp` (RFC 8707)",
    )
    auth_jwks_url: str | None = option(
        None, "JWKS of the issuer's signing keys (https, or http on loopback)", group="auth", metavar="URL"
    )
    auth_jwks_ttl: float = option(600.0, "seconds a fetched JWKS is reused", group="auth", kind="float")
    auth_jwt_key: str | None = option(
        None, "static verification key instead of a JWKS: a PEM public key or an HS secret", group="auth", secret=True
    )
    auth_jwt_key_file: str | None = option(
        None, "file holding the static verification key", group="auth", metavar="FILE"
    )
    auth_algorithms: tuple[str, ...] = option(
        ("RS256", "ES256"), "accepted JWT algorithms (`none` never)", group="auth", kind="list", metavar="ALG"
    )
    auth_scopes: tuple[str, ...] = option(
        (), "scopes every authenticated request needs", group="auth", kind="list", metavar="SCOPE"
    )
    auth_route_scopes: tuple[str, ...] = option(
        (),
        "scopes per path prefix: `/metrics=metrics:read`",
        group="auth",
        kind="list",
        metavar="PATH=SCOPE[ SCOPE]",
    )
    auth_tool_scopes: tuple[str, ...] = option(
        (),
        "scopes per tool glob: `admin.*=admin`",
        group="auth",
        kind="list",
        metavar="GLOB=SCOPE[ SCOPE]",
    )
    auth_id_claim: str = option("sub", "claim giving the caller identity's id", group="auth")
    auth_roles_claim: str = option(
        "roles", "claim (dotted path) giving its roles: a list or a space-separated string", group="auth"
    )
    auth_api_keys: tuple[str, ...] = option(
        (),
        "accepted API keys, as hashes: `SHA256HEX:ID[:ROLE ROLE[:SCOPE SCOPE]]`",
        group="auth",
        kind="list",
        metavar="ENTRY",
        secret=True,
    )
    auth_api_keys_file: str | None = option(
        None, "file of API key entries, one a line (`#` comments)", group="auth", metavar="FILE"
    )
    auth_metrics: bool = option(True, "require a token on `/metrics` when auth is on", group="auth", kind="bool")
    auth_filter_tools: bool = option(
        False, "list only the tools the caller may call (apcore ACL and tool scopes)", group="auth", kind="bool"
    )
    stdio_identity: str | None = option(
        None, "identity id stdio (and in-memory) calls run as; none when unset", group="auth", metavar="ID"
    )
    stdio_identity_type: str = option("user", "type of that identity", group="auth")
    stdio_roles: tuple[str, ...] = option((), "roles of that identity", group="auth", kind="list", metavar="ROLE")
    # -- upstreams -------------------------------------------------------------------------------
    mcp_config: str | None = option(
        None,
        "Claude-style `mcp.json` (`mcpServers`, optional `toolsets`) of upstream MCP servers to mount as tools",
        group="upstreams",
        env="CONFIG",
        metavar="FILE",
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

    @property
    def keeps_stream_events(self) -> bool:
        """Whether streams resume with ``Last-Event-ID``: sessions answering over SSE, with ``resumable`` on."""
        return self.resumable and not self.stateless and not self.json_response

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    def server_version(self) -> str:
        return self.version or __version__


OLD_NAMES: dict[str, str] = {
    old: item.name for item in dataclasses.fields(SettingsFields) for old in item.metadata["spec"]["old_names"]
}
"""Deprecated keyword -> the setting's name now (``option(old_names=...)``)."""


class Settings(SettingsFields):
    """The settings, every field checked on construction (a deprecated name is accepted, with a warning).

    Raises:
        SettingError: a bad value, or a setting given under its name and its old name at once.
    """

    def __init__(self, **values: Unpack[SettingsOptions]) -> None:
        super().__init__(**new_names(dict(values)))
        for check in CHECKS:
            check(self)

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (checked again, as on construction)."""
        return dataclasses.replace(self, **new_names(changes))


def new_names(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each deprecated keyword (``OLD_NAMES``) renamed to the setting's name, warned about."""
    for old, new in OLD_NAMES.items():
        if old in values:
            if new in values:
                raise SettingError(new, both_spellings(old, new))
            warn_renamed(old, new, stacklevel=4)
            values[new] = values.pop(old)
    return values


def is_loopback_host(host: str) -> bool:
    """A loopback IP address or ``localhost``; a DNS name such as ``127.example.com`` is not."""
    return is_loopback_address(host)


def configure_logging(level: str | None) -> None:
    """Apply ``log_level``: a stderr handler via ``basicConfig`` and the ``apcore_mcp`` level.

    ``None`` leaves logging untouched: as a library we install nothing by default.
    """
    if level is None:
        return
    numeric = getattr(logging, normalize_log_level(level))
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apcore_mcp").setLevel(numeric)
