"""``mcp.json``: the ``mcpServers`` map clients use, plus named toolsets, parsed into frozen specs.

A server is either a command (stdio: ``command``, ``args``, ``env``, ``cwd``) or a URL
(``url``, ``headers``, ``transport`` ``http`` | ``sse``). Optional per server: ``timeout``
(seconds: the handshake and each request), ``enabled``, ``sharing`` (``shared`` |
``per-principal`` | ``per-session``), ``aliases`` and ``protocol`` (``auto`` | ``legacy``).
``toolsets`` name sets of servers (names, aliases or ``all``) and of local modules (``tags``,
``prefix``, or ``false`` for none), each optionally in ``toolMode`` ``search``. The old name of
``toolsets``, ``scopes``, is still read, with a deprecation warning; both at once is a problem.

Every problem in the file is reported at once, each naming its place (``mcpServers.gh.url``).
A ``${VAR}`` with no value skips that server with a WARNING naming the server and the
variable (``strict``: an error instead); values never appear in messages.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from apcore_mcp.upstream.config.checks import check_aliases, check_server, check_toolsets
from apcore_mcp.upstream.expand import Redactor, expand
from apcore_mcp.upstream.openapi.entries import openapi_entries
from apcore_mcp.upstream.specs import (
    ALL,
    DEFAULT_TIMEOUT,
    DEFAULT_TOOLSET,
    PROTOCOLS,
    SHARING,
    TOOL_MODES,
    TRANSPORTS,
    Problem,
    ServerSpec,
    TokenExchangeSpec,
    ToolsetSpec,
    UpstreamConfig,
    UpstreamConfigError,
    resolve_selection,
)

__all__ = [
    "ALL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOOLSET",
    "PROTOCOLS",
    "SHARING",
    "TOOL_MODES",
    "TRANSPORTS",
    "Problem",
    "ServerSpec",
    "ToolsetSpec",
    "UpstreamConfig",
    "UpstreamConfigError",
    "load_config",
    "parse_config",
    "resolve_selection",
]

logger = logging.getLogger(__name__)

TOOLSETS_KEY = "toolsets"
OLD_TOOLSETS_KEY = "scopes"
"""The old name of ``toolsets`` (too easily read as OAuth scopes); still read, with a warning."""


def load_config(
    path: str | Path | None, environ: Mapping[str, str], *, strict: bool = False, openapi: Sequence[str] = ()
) -> UpstreamConfig:
    """Read and check ``path`` (``None``: no file), plus an ``openapi`` server per document of ``openapi``.

    Raises:
        UpstreamConfigError: unreadable or invalid file, or (``strict``) a missing variable.
    """
    if path is None:
        return parse_config({}, environ, strict=strict, source="--from-openapi", openapi=openapi)
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UpstreamConfigError([Problem(source, f"cannot be read ({exc.strerror or exc})")], source) from None
    except json.JSONDecodeError as exc:
        raise UpstreamConfigError([Problem(source, f"is not JSON: {exc.msg} at line {exc.lineno}")], source) from None
    return parse_config(data, environ, strict=strict, source=source, base_dir=Path(path).parent, openapi=openapi)


def parse_config(
    data: Any,
    environ: Mapping[str, str],
    *,
    strict: bool = False,
    source: str = "mcp config",
    base_dir: Path | None = None,
    openapi: Sequence[str] = (),
) -> UpstreamConfig:
    """Check a parsed ``mcp.json`` document and expand its placeholders (see the module doc).

    ``base_dir``: where a relative ``openapi`` file path is read from (the file's directory;
    else the working directory). ``openapi``: documents given outside the file (``--from-openapi``),
    each mounted as a server of its own.
    """
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise UpstreamConfigError([Problem(source, "must be a JSON object")], source)
    raw_servers = data.get("mcpServers", {})
    if not isinstance(raw_servers, dict):
        problems.append(Problem("mcpServers", "must be an object of server name -> server"))
        raw_servers = {}
    raw_servers = {**raw_servers, **openapi_entries(openapi, raw_servers, problems)}
    redactor = Redactor()
    servers: dict[str, ServerSpec] = {}
    skipped: dict[str, str] = {}
    for name, raw in raw_servers.items():
        spec = check_server(name, raw, problems)
        if spec is None:
            continue
        if raw.get("enabled", True) is False:
            skipped[name] = "disabled"
            continue
        expanded, missing = _expand_spec(spec, environ, redactor, base_dir)
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
        endpoint = expanded.token_exchange.token_endpoint if expanded.token_exchange is not None else None
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            where = f"mcpServers.{name}.auth.tokenEndpoint"
            problems.append(Problem(where, "must start with http:// or https:// once expanded"))
            continue
        if expanded.base_url is not None and not expanded.base_url.startswith(("http://", "https://")):
            problems.append(Problem(f"mcpServers.{name}.baseUrl", "must start with http:// or https:// once expanded"))
            continue
        servers[name] = expanded
    aliases = check_aliases(raw_servers, problems)
    key, raw_toolsets = _toolsets_entry(data, source, problems)
    toolsets = check_toolsets(raw_toolsets, raw_servers, aliases, servers, problems, key=key)
    if problems:
        raise UpstreamConfigError(problems, source)
    return UpstreamConfig(servers=servers, skipped=skipped, toolsets=toolsets, redactor=redactor)


def _toolsets_entry(data: dict[str, Any], source: str, problems: list[Problem]) -> tuple[str, Any]:
    """``(key, toolsets)``: the file's toolsets under ``toolsets``, or under their old name ``scopes``."""
    if OLD_TOOLSETS_KEY not in data:
        return TOOLSETS_KEY, data.get(TOOLSETS_KEY, {})
    if TOOLSETS_KEY in data:
        problems.append(Problem(OLD_TOOLSETS_KEY, f'the old name of "{TOOLSETS_KEY}": give one of them, not both'))
        return TOOLSETS_KEY, data[TOOLSETS_KEY]
    message = f'{source}: "{OLD_TOOLSETS_KEY}" is deprecated, rename it "{TOOLSETS_KEY}"'
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    logger.warning(message)  # an operator's file: the warnings filter hides DeprecationWarning from them
    return OLD_TOOLSETS_KEY, data[OLD_TOOLSETS_KEY]


def _expand_spec(
    spec: ServerSpec, environ: Mapping[str, str], redactor: Redactor, base_dir: Path | None = None
) -> tuple[ServerSpec, list[str]]:
    """The spec with placeholders expanded in command, args, env, cwd, url, headers, openapi and baseUrl;
    the variables missing. A relative ``openapi`` file path is made absolute against ``base_dir``."""
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
        openapi=_document(one(spec.openapi), base_dir),
        base_url=one(spec.base_url),
        operations=spec.operations,
        token_exchange=_expand_exchange(spec, one),
        pin=spec.pin,
    )
    redactor.add(secrets)
    # Header and env values are credentials more often than not, whether or not they came from a variable.
    redactor.add(value for _key, value in (*expanded.headers, *expanded.env))
    if expanded.token_exchange is not None and expanded.token_exchange.client_secret:
        redactor.add([expanded.token_exchange.client_secret])
    return expanded, missing


def _expand_exchange(spec: ServerSpec, one: Callable[[str | None], str | None]) -> TokenExchangeSpec | None:
    exchange = spec.token_exchange
    if exchange is None:
        return None
    return dataclasses.replace(
        exchange,
        token_endpoint=one(exchange.token_endpoint) or "",
        audience=one(exchange.audience),
        resource=one(exchange.resource),
        client_id=one(exchange.client_id),
        client_secret=one(exchange.client_secret),
    )


def _document(value: str | None, base_dir: Path | None) -> str | None:
    if value is None or value.startswith(("http://", "https://")):
        return value
    return str((base_dir or Path.cwd()) / Path(value).expanduser())
