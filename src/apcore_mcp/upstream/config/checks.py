"""The checks of one ``mcpServers`` entry and of the ``toolsets``: each problem names its place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from apcore_mcp.upstream.specs import (
    ALL,
    DEFAULT_TIMEOUT,
    OPENAPI,
    PROTOCOLS,
    SERVER_KEYS,
    SHARING,
    TOOL_MODES,
    TOOLSET_KEYS,
    TRANSPORT_ALIASES,
    TRANSPORTS,
    Problem,
    ServerSpec,
    ToolsetSpec,
    resolve_selection,
)
from apcore_mcp.upstream.token_exchange.checks import check_token_exchange


class _Common(NamedTuple):
    timeout: float
    sharing: str
    protocol: str
    aliases: tuple[str, ...]
    description: str
    pin: bool


def check_server(name: Any, raw: Any, problems: list[Problem]) -> ServerSpec | None:
    where = f"mcpServers.{name}"
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("mcpServers", f"server names must be non-empty strings, got {name!r}"))
        return None
    if not isinstance(raw, dict):
        problems.append(Problem(where, "must be an object"))
        return None
    before = len(problems)
    for key in sorted(set(raw) - SERVER_KEYS):
        problems.append(Problem(f"{where}.{key}", "unknown field"))
    transport = OPENAPI if "openapi" in raw else _transport(raw, where, problems)
    exchange = check_token_exchange(raw, where, problems)
    common = _Common(
        timeout=_timeout(raw.get("timeout", DEFAULT_TIMEOUT), f"{where}.timeout", problems),
        sharing=_choice(raw.get("sharing", _default_sharing(raw)), SHARING, f"{where}.sharing", problems),
        protocol=_choice(raw.get("protocol", "auto"), PROTOCOLS, f"{where}.protocol", problems),
        aliases=tuple(_strings(raw.get("aliases", []), f"{where}.aliases", problems)),
        description=_text(raw.get("description", ""), f"{where}.description", problems),
        pin=raw.get("pin", True) is not False,
    )
    for flag in ("enabled", "pin"):
        if not isinstance(raw.get(flag, True), bool):
            problems.append(Problem(f"{where}.{flag}", "must be true or false"))
    if transport == OPENAPI:
        spec = _openapi_server(name, raw, where, common, problems)
    elif transport == "stdio":
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
            token_exchange=exchange,
            **common._asdict(),
        )
    else:
        return None
    return spec if len(problems) == before else None


def _default_sharing(raw: dict[str, Any]) -> str:
    """``per-principal`` for an entry calling as each caller (``auth``), else ``shared``."""
    return "per-principal" if "auth" in raw else "shared"


_NOT_FOR_OPENAPI = ("command", "args", "env", "cwd", "url", "transport", "type", "sharing", "protocol")
"""MCP-server fields an ``openapi`` entry has no use for: each is a mistake worth naming."""


def _openapi_server(name: str, raw: dict[str, Any], where: str, common: _Common, problems: list[Problem]) -> ServerSpec:
    for key in _NOT_FOR_OPENAPI:
        if key in raw:
            problems.append(Problem(f"{where}.{key}", "not for an openapi entry (an HTTP API, not an MCP server)"))
    document = raw.get("openapi")
    if not isinstance(document, str) or not document.strip():
        problems.append(Problem(f"{where}.openapi", "must be the URL or file path of an OpenAPI document"))
        document = None
    operations = raw.get("operations")
    if operations is not None:
        if not isinstance(operations, list) or not operations:
            problems.append(Problem(f"{where}.operations", "must be a non-empty list of operationIds"))
        operations = tuple(_strings(operations, f"{where}.operations", problems)) or None
    base_url = raw.get("baseUrl")
    if base_url is not None:
        base_url = _url(base_url, f"{where}.baseUrl", problems)
    return ServerSpec(
        name=name,
        transport=OPENAPI,
        openapi=document,
        base_url=base_url,
        operations=operations,
        headers=tuple(sorted(_string_map(raw.get("headers", {}), f"{where}.headers", problems).items())),
        **common._asdict(),
    )


def _transport(raw: dict[str, Any], where: str, problems: list[Problem]) -> str | None:
    has_command, has_url = "command" in raw, "url" in raw
    if has_command and has_url:
        problems.append(Problem(where, '"command" and "url" are mutually exclusive: a server is one or the other'))
        return None
    if not has_command and not has_url:
        problems.append(
            Problem(where, 'needs "command" (a stdio server), "url" (an http or sse server) or "openapi" (an HTTP API)')
        )
        return None
    declared = raw.get("transport", raw.get("type"))
    if "transport" in raw and "type" in raw and raw["transport"] != raw["type"]:
        problems.append(Problem(f"{where}.transport", '"transport" and "type" disagree'))
        return None
    if declared is None:
        return "stdio" if has_command else "http"
    value = TRANSPORT_ALIASES.get(str(declared).lower(), str(declared).lower()) if isinstance(declared, str) else None
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


def check_aliases(raw_servers: Mapping[str, Any], problems: list[Problem]) -> dict[str, list[str]]:
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


def check_toolsets(
    raw: Any,
    raw_servers: Mapping[str, Any],
    aliases: Mapping[str, Sequence[str]],
    servers: Mapping[str, ServerSpec],
    problems: list[Problem],
    *,
    key: str = "toolsets",
) -> dict[str, ToolsetSpec]:
    """The toolsets of the file; ``key`` is the file's spelling (``toolsets``, or its old name ``scopes``)."""
    if not isinstance(raw, dict):
        problems.append(Problem(key, "must be an object of toolset name -> toolset"))
        return {}
    toolsets: dict[str, ToolsetSpec] = {}
    for name, body in raw.items():
        where = f"{key}.{name}"
        if not isinstance(body, dict):
            problems.append(Problem(where, "must be an object"))
            continue
        for key in sorted(set(body) - TOOLSET_KEYS):
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
        # Servers skipped (disabled, missing variable) drop out; the toolset serves the rest.
        toolsets[name] = ToolsetSpec(
            name=name,
            servers=tuple(server for server in found if server in servers),
            modules=modules,
            tags=tags,
            prefix=prefix,
            tool_mode=mode,
        )
    return toolsets


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
