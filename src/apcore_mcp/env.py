"""Settings from ``APCORE_MCP_*`` environment variables, read once by the deployment entry point."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apcore_mcp.settings import Settings

PREFIX = "APCORE_MCP_"
DEFAULT_EXTENSIONS_DIR = "examples/extensions"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _str(text: str) -> str:
    return text


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


@dataclass(frozen=True)
class EnvVar:
    name: str
    field: str
    parse: Callable[[str], Any]
    help: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("EXTENSIONS_DIR", "", _str, f"apcore extensions directory to discover (default `{DEFAULT_EXTENSIONS_DIR}`)"),
    EnvVar("NAME", "name", _str, "server name reported to clients (default `apcore-mcp`)"),
    EnvVar("VERSION", "version", _str, "server version reported to clients (default: the package version)"),
    EnvVar("TAGS", "tags", _list, "comma list: serve only modules carrying all these tags"),
    EnvVar("PREFIX", "prefix", _str, "serve only modules whose id starts with this"),
    EnvVar(
        "HOST",
        "host",
        _str,
        "address the service is bound to: decides Host checking and the token rule "
        "(default `127.0.0.1`; set `0.0.0.0` in a container)",
    ),
    EnvVar(
        "ALLOWED_HOSTS",
        "allowed_hosts",
        _list,
        "comma list of extra Host values accepted: `name` (any port), `name:port`, `name:*`",
    ),
    EnvVar("ALLOWED_ORIGINS", "allowed_origins", _list, "comma list of extra browser origins accepted"),
    EnvVar("DYNAMIC", "dynamic", _bool, "reflect registry changes live (`listChanged`) (default false)"),
    EnvVar("STATELESS", "stateless", _bool, "Streamable HTTP without sessions, for several replicas (default false)"),
    EnvVar("JSON_RESPONSE", "json_response", _bool, "answer `POST /mcp` with JSON instead of SSE (default false)"),
    EnvVar("METRICS", "metrics", _bool, "serve `/metrics` (default true)"),
    EnvVar("EXPLORER", "explorer", _bool, "serve the browser explorer (default false)"),
    EnvVar("EXPLORER_PREFIX", "explorer_prefix", _str, "URL prefix of the explorer (default `/explorer`)"),
    EnvVar("ALLOW_EXECUTE", "allow_execute", _bool, "let the explorer call tools (default false)"),
    EnvVar(
        "EXECUTE_TOKEN",
        "execute_token",
        _str,
        "bearer token for explorer calls (16+ chars); when unset and "
        "the host is not loopback, a random one is made and logged",
    ),
    EnvVar(
        "SHUTDOWN_TIMEOUT", "shutdown_timeout", _float, "seconds calls in flight get to finish on shutdown (default 3)"
    ),
    EnvVar("LOG_LEVEL", "log_level", _str, "`DEBUG`, `INFO`, `WARNING` or `ERROR` (default: logging untouched)"),
)


def settings_from_env(environ: Mapping[str, str]) -> tuple[Settings, str]:
    """``(settings, extensions_dir)`` from the environment.

    Raises:
        ValueError: a variable is malformed or invalid; the message names the variable.
    """
    known = {PREFIX + var.name for var in ENV_VARS}
    unknown = sorted(key for key in environ if key.startswith(PREFIX) and key not in known)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown setting (known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    extensions_dir = DEFAULT_EXTENSIONS_DIR
    for var in ENV_VARS:
        raw = environ.get(PREFIX + var.name)
        if raw is None:
            continue
        try:
            value = var.parse(raw)
        except ValueError as exc:
            raise ValueError(f"{PREFIX}{var.name}: {exc}") from None
        if var.field:
            values[var.field] = value
        else:
            extensions_dir = value
    try:
        return Settings(**values), extensions_dir
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{_culprit(str(exc), values)}{exc}") from None


def _culprit(message: str, values: dict[str, Any]) -> str:
    """Prefix a Settings error with the variable that caused it, when it can be told."""
    fields = {field.name for field in dataclasses.fields(Settings)}
    lowered = message.lower()
    for var in ENV_VARS:
        if var.field in values and var.field in fields and var.field.replace("_", " ") in lowered.replace("_", " "):
            return f"{PREFIX}{var.name}: "
    aliases = {"tag": "TAGS", "host": "HOST", "log level": "LOG_LEVEL"}
    for word, name in aliases.items():
        if word in lowered:
            return f"{PREFIX}{name}: "
    return ""


def settings_table() -> str:
    """The README's table of variables (kept in one place: ``ENV_VARS``)."""
    rows = [f"| `{PREFIX}{var.name}` | {var.help} |" for var in ENV_VARS]
    return "\n".join(["| variable | meaning |", "| --- | --- |", *rows])
