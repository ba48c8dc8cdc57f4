"""``mcp.json``: the ``mcpServers`` map clients use, plus named scopes, parsed into frozen specs.

A server is either a command (stdio: ``command``, ``args``, ``env``, ``cwd``) or a URL
(``url``, ``headers``, ``transport`` ``http`` | ``sse``). Optional per server: ``timeout``
(seconds: the handshake and each request), ``enabled``, ``sharing`` (``shared`` |
``per-principal`` | ``per-session``), ``aliases`` and ``protocol`` (``auto`` | ``legacy``).
``scopes`` name sets of servers (names, aliases or ``all``) and of local modules (``tags``,
``prefix``, or ``false`` for none), each optionally in ``toolMode`` ``search``.

Every problem in the file is reported at once, each naming its place (``mcpServers.gh.url``).
A ``${VAR}`` with no value skips that server with a WARNING naming the server and the
variable (``strict``: an error instead); values never appear in messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from apcore_mcp.upstream.expand import Redactor, expand

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "http", "sse")
_TRANSPORT_ALIASES = {"streamable-http": "http", "streamablehttp": "http", "streamable_http": "http"}
SHARING = ("shared", "per-principal", "per-session")
PROTOCOLS = ("auto", "legacy")
TOOL_MODES = ("list", "search")
DEFAULT_SCOPE = "default"
DEFAULT_TIMEOUT = 30.0
ALL = "all"

_SERVER_KEYS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "transport", "type", "timeout", "enabled", "sharing"}
    | {"aliases", "protocol", "description"}
)
_SCOPE_KEYS = frozenset({"servers", "modules", "toolMode", "description"})


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

    @property
    def is_remote(self) -> bool:
        return self.transport != "stdio"

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes the running server: equal keys share one process or connection."""
        if self.is_remote:
            return (self.name, self.transport, self.url, self.headers, self.protocol)
        return (self.name, "stdio", self.command, self.args, self.env, self.cwd, self.protocol)

    def __repr__(self) -> str:
        return f"ServerSpec(name={self.name!r}, transport={self.transport!r})"


@dataclass(frozen=True)
class ScopeSpec:
    """A named view: which upstream servers and which local modules it serves, and how."""

    name: str
    servers: tuple[str, ...]
    modules: bool = True
    tags: tuple[str, ...] | None = None
    prefix: str | None = None
    tool_mode: str | None = None
    implicit: bool = False
    """Made up because the file names no such scope (the default scope: every server)."""


@dataclass(frozen=True)
class UpstreamConfig:
    servers: Mapping[str, ServerSpec] = field(default_factory=dict)
    """Enabled servers whose placeholders all resolved."""
    skipped: Mapping[str, str] = field(default_factory=dict)
    """Servers left out, with the reason (disabled, a missing variable)."""
    scopes: Mapping[str, ScopeSpec] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)

    def scope(self, name: str = DEFAULT_SCOPE) -> ScopeSpec:
        """The named scope; the default scope (every server, every local module) when not in the file.

        Raises:
            KeyError: for an unknown scope name other than the default.
        """
        if name in self.scopes:
            return self.scopes[name]
        if name == DEFAULT_SCOPE:
            return ScopeSpec(DEFAULT_SCOPE, servers=tuple(self.servers), implicit=True)
        raise KeyError(f"Unknown scope {name!r}; the config defines: {', '.join(sorted(self.scopes)) or 'none'}")


def load_config(path: str | Path, environ: Mapping[str, str], *, strict: bool = False) -> UpstreamConfig:
    """Read and check ``path``.

    Raises:
        UpstreamConfigError: unreadable or invalid file, or (``strict``) a missing variable.
    """
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UpstreamConfigError([Problem(source, f"cannot be read ({exc.strerror or exc})")], source) from None
    except json.JSONDecodeError as exc:
        raise UpstreamConfigError([Problem(source, f"is not JSON: {exc.msg} at line {exc.lineno}")], source) from None
    return parse_config(data, environ, strict=strict, source=source)


def parse_config(
    data: Any, environ: Mapping[str, str], *, strict: bool = False, source: str = "mcp config"
) -> UpstreamConfig:
    """Check a parsed ``mcp.json`` document and expand its placeholders (see the module doc)."""
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise UpstreamConfigError([Problem(source, "must be a JSON object")], source)
    raw_servers = data.get("mcpServers", {})
    if not isinstance(raw_servers, dict):
        problems.append(Problem("mcpServers", "must be an object of server name -> server"))
        raw_servers = {}
    redactor = Redactor()
    servers: dict[str, ServerSpec] = {}
    skipped: dict[str, str] = {}
    for name, raw in raw_servers.items():
        spec = _server(name, raw, problems)
        if spec is None:
            continue
        if raw.get("enabled", True) is False:
            skipped[name] = "disabled"
            continue
        expanded, missing = _expand_spec(spec, environ, redactor)
        if missing:
            reason = f"environment variable(s) {', '.join(missing)} not set"
            if strict:
                problems.append(Problem(f"mcpServers.{name}", f"{reason} (strict mode)"))
            else:
                logger.warning("Upstream server %r skipped: %s", name, reason)
            skipped[name] = reason
            continue
        if expanded.url is not None and not expanded.url.startswith(("http://", "https://")):
            problems.append(Problem(f"mcpServers.{name}.url", "must start with http:// or https:// once expanded"))
            continue
        servers[name] = expanded
    aliases = _aliases(raw_servers, problems)
    scopes = _scopes(data.get("scopes", {}), raw_servers, aliases, servers, problems)
    if problems:
        raise UpstreamConfigError(problems, source)
    return UpstreamConfig(servers=servers, skipped=skipped, scopes=scopes, redactor=redactor)


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


# -- one server ---------------------------------------------------------------------------------


class _Common(NamedTuple):
    timeout: float
    sharing: str
    protocol: str
    aliases: tuple[str, ...]
    description: str


def _server(name: Any, raw: Any, problems: list[Problem]) -> ServerSpec | None:
    where = f"mcpServers.{name}"
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("mcpServers", f"server names must be non-empty strings, got {name!r}"))
        return None
    if not isinstance(raw, dict):
        problems.append(Problem(where, "must be an object"))
        return None
    before = len(problems)
    for key in sorted(set(raw) - _SERVER_KEYS):
        problems.append(Problem(f"{where}.{key}", "unknown field"))
    transport = _transport(raw, where, problems)
    common = _Common(
        timeout=_timeout(raw.get("timeout", DEFAULT_TIMEOUT), f"{where}.timeout", problems),
        sharing=_choice(raw.get("sharing", "shared"), SHARING, f"{where}.sharing", problems),
        protocol=_choice(raw.get("protocol", "auto"), PROTOCOLS, f"{where}.protocol", problems),
        aliases=tuple(_strings(raw.get("aliases", []), f"{where}.aliases", problems)),
        description=_text(raw.get("description", ""), f"{where}.description", problems),
    )
    if not isinstance(raw.get("enabled", True), bool):
        problems.append(Problem(f"{where}.enabled", "must be true or false"))
    if transport == "stdio":
        for key in ("headers", "url"):
            if key in raw:
                problems.append(Problem(f"{where}.{key}", "only for url servers (this one has a command)"))
        spec = ServerSpec(
            name=name,
            transport="stdio",
            command=_command(raw.get("command"), f"{where}.command", problems),
            args=tuple(_strings(raw.get("args", []), f"{where}.args", problems)),
            env=tuple(sorted(_string_map(raw.get("env", {}), f"{where}.env", problems, coerce=True).items())),
            cwd=_optional_text(raw.get("cwd"), f"{where}.cwd", problems),
            **common._asdict(),
        )
    elif transport is not None:
        for key, hint in (("env", " (use headers)"), ("args", ""), ("cwd", "")):
            if key in raw:
                problems.append(Problem(f"{where}.{key}", f"only for command servers (this one has a url){hint}"))
        spec = ServerSpec(
            name=name,
            transport=transport,
            url=_url(raw.get("url"), f"{where}.url", problems),
            headers=tuple(sorted(_string_map(raw.get("headers", {}), f"{where}.headers", problems).items())),
            **common._asdict(),
        )
    else:
        return None
    return spec if len(problems) == before else None


def _transport(raw: dict[str, Any], where: str, problems: list[Problem]) -> str | None:
    has_command, has_url = "command" in raw, "url" in raw
    if has_command and has_url:
        problems.append(Problem(where, '"command" and "url" are mutually exclusive: a server is one or the other'))
        return None
    if not has_command and not has_url:
        problems.append(Problem(where, 'needs "command" (a stdio server) or "url" (an http or sse server)'))
        return None
    declared = raw.get("transport", raw.get("type"))
    if "transport" in raw and "type" in raw and raw["transport"] != raw["type"]:
        problems.append(Problem(f"{where}.transport", '"transport" and "type" disagree'))
        return None
    if declared is None:
        return "stdio" if has_command else "http"
    value = _TRANSPORT_ALIASES.get(str(declared).lower(), str(declared).lower()) if isinstance(declared, str) else None
    if value not in TRANSPORTS:
        problems.append(Problem(f"{where}.transport", f"must be one of http, sse (or stdio), got {declared!r}"))
        return None
    if has_command and value != "stdio":
        problems.append(Problem(f"{where}.transport", f"{value!r} needs a url; a command server is stdio"))
        return None
    if has_url and value == "stdio":
        problems.append(Problem(f"{where}.transport", "'stdio' needs a command; a url server is http or sse"))
        return None
    return value


def _command(value: Any, where: str, problems: list[Problem]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        problems.append(Problem(where, "must be a non-empty string"))
        return None
    return value


def _url(value: Any, where: str, problems: list[Problem]) -> str | None:
    if not isinstance(value, str) or not value.strip():
        problems.append(Problem(where, "must be a non-empty string"))
        return None
    if not value.startswith(("http://", "https://", "${")):
        problems.append(Problem(where, "must start with http:// or https://"))
        return None
    return value


def _timeout(value: Any, where: str, problems: list[Problem]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        problems.append(Problem(where, f"must be a positive number of seconds, got {value!r}"))
        return DEFAULT_TIMEOUT
    return float(value)


def _choice(value: Any, choices: Sequence[str], where: str, problems: list[Problem]) -> str:
    if value not in choices:
        problems.append(Problem(where, f"must be one of {', '.join(choices)}, got {value!r}"))
        return choices[0]
    return str(value)


def _text(value: Any, where: str, problems: list[Problem]) -> str:
    if not isinstance(value, str):
        problems.append(Problem(where, "must be a string"))
        return ""
    return value


def _optional_text(value: Any, where: str, problems: list[Problem]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.append(Problem(where, "must be a non-empty string"))
        return None
    return value


def _strings(value: Any, where: str, problems: list[Problem]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.append(Problem(where, "must be a list of strings"))
        return []
    return list(value)


def _string_map(value: Any, where: str, problems: list[Problem], *, coerce: bool = False) -> dict[str, str]:
    if not isinstance(value, dict):
        problems.append(Problem(where, "must be an object of name -> string"))
        return {}
    result: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, str):
            result[key] = item
        elif coerce and isinstance(item, bool):
            result[key] = "true" if item else "false"
        elif coerce and isinstance(item, int | float):
            result[key] = str(item)
        else:
            problems.append(Problem(f"{where}.{key}", f"must be a string, got {type(item).__name__}"))
    return result


def _expand_spec(spec: ServerSpec, environ: Mapping[str, str], redactor: Redactor) -> tuple[ServerSpec, list[str]]:
    """The spec with placeholders expanded in command, args, env, cwd, url and headers; the variables missing."""
    missing: list[str] = []
    secrets: list[str] = []

    def one(value: str | None) -> str | None:
        if value is None:
            return None
        result = expand(value, environ)
        missing.extend(name for name in result.missing if name not in missing)
        secrets.extend(result.secrets)
        return result.text

    def pairs(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((key, one(value) or "") for key, value in items)

    expanded = ServerSpec(
        name=spec.name,
        transport=spec.transport,
        command=one(spec.command),
        args=tuple(one(arg) or "" for arg in spec.args),
        env=pairs(spec.env),
        cwd=one(spec.cwd),
        url=one(spec.url),
        headers=pairs(spec.headers),
        timeout=spec.timeout,
        sharing=spec.sharing,
        aliases=spec.aliases,
        protocol=spec.protocol,
        description=spec.description,
    )
    redactor.add(secrets)
    # Header and env values are credentials more often than not, whether or not they came from a variable.
    redactor.add(value for _key, value in (*expanded.headers, *expanded.env))
    return expanded, missing


# -- aliases and scopes -------------------------------------------------------------------------


def _aliases(raw_servers: Mapping[str, Any], problems: list[Problem]) -> dict[str, list[str]]:
    """alias -> server names (several servers may share an alias: it then names the group)."""
    groups: dict[str, list[str]] = {}
    for name, raw in raw_servers.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("aliases", []), list):
            continue
        for alias in raw.get("aliases", []):
            if not isinstance(alias, str):
                continue
            if alias in raw_servers or alias == ALL:
                problems.append(Problem(f"mcpServers.{name}.aliases", f"{alias!r} is already a server name"))
                continue
            groups.setdefault(alias.strip(), []).append(name)
    return groups


def _scopes(
    raw: Any,
    raw_servers: Mapping[str, Any],
    aliases: Mapping[str, Sequence[str]],
    servers: Mapping[str, ServerSpec],
    problems: list[Problem],
) -> dict[str, ScopeSpec]:
    if not isinstance(raw, dict):
        problems.append(Problem("scopes", "must be an object of scope name -> scope"))
        return {}
    scopes: dict[str, ScopeSpec] = {}
    for name, body in raw.items():
        where = f"scopes.{name}"
        if not isinstance(body, dict):
            problems.append(Problem(where, "must be an object"))
            continue
        for key in sorted(set(body) - _SCOPE_KEYS):
            problems.append(Problem(f"{where}.{key}", "unknown field"))
        selection = body.get("servers", [])
        if not isinstance(selection, str | list) or not all(isinstance(item, str) for item in selection):
            problems.append(Problem(f"{where}.servers", 'must be "all", a list of names or aliases, or a comma list'))
            continue
        found, unknown = resolve_selection(selection, list(raw_servers), aliases)
        for entry in unknown:
            problems.append(Problem(f"{where}.servers", f"{entry!r} is neither a server nor an alias"))
        modules, tags, prefix = _modules(body.get("modules", True), f"{where}.modules", problems)
        mode = body.get("toolMode")
        if mode is not None and mode not in TOOL_MODES:
            problems.append(Problem(f"{where}.toolMode", f"must be one of {', '.join(TOOL_MODES)}, got {mode!r}"))
        # Servers skipped (disabled, missing variable) drop out; the scope serves the rest.
        scopes[name] = ScopeSpec(
            name=name,
            servers=tuple(server for server in found if server in servers),
            modules=modules,
            tags=tags,
            prefix=prefix,
            tool_mode=mode,
        )
    return scopes


def _modules(value: Any, where: str, problems: list[Problem]) -> tuple[bool, tuple[str, ...] | None, str | None]:
    if isinstance(value, bool):
        return value, None, None
    if not isinstance(value, dict) or set(value) - {"tags", "prefix"}:
        problems.append(Problem(where, 'must be true, false or {"tags": [...], "prefix": "..."}'))
        return False, None, None
    tags = value.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags)):
        problems.append(Problem(f"{where}.tags", "must be a list of non-empty strings"))
        tags = None
    prefix = value.get("prefix")
    if prefix is not None and (not isinstance(prefix, str) or not prefix):
        problems.append(Problem(f"{where}.prefix", "must be a non-empty string"))
        prefix = None
    return True, tuple(tags) if tags else None, prefix
