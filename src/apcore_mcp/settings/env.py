"""Settings from ``APCORE_MCP_*`` environment variables, read once at an entry point.

The variables are derived from the ``Settings`` declarations (``declared.options()``), plus
the launch options that are not server settings (``LAUNCH_OPTIONS``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apcore_mcp.settings import ENV_PREFIX, Option, SettingError, Settings
from apcore_mcp.settings.declared import options
from apcore_mcp.settings.option import both_spellings, warn_renamed

DEFAULT_EXTENSIONS_DIR = "examples/extensions"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

LAUNCH_OPTIONS: tuple[Option, ...] = (
    Option(
        name="extensions_dir",
        help=f"apcore extensions directory to discover (the app factory's default: `{DEFAULT_EXTENSIONS_DIR}`)",
        group="launch",
        kind="str",
        flag="--extensions-dir",
        env="EXTENSIONS_DIR",
        metavar="DIR",
    ),
    Option(
        name="transport",
        help="`stdio`, `streamable-http` or `sse` (deprecated)",
        group="launch",
        kind="choice",
        flag="--transport",
        env=None,
        choices=("stdio", "streamable-http", "sse"),
        default_text="`stdio`",
    ),
)


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None


def _parse_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


PARSERS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "choice": str,
    "int": _parse_int,
    "float": _parse_float,
    "bool": parse_bool,
    "list": parse_list,
}


def env_values(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(settings values, launch values)`` from the ``APCORE_MCP_*`` variables that are set.

    A deprecated variable (``Option.old_env_vars``) stands for its new one, with a warning.

    Raises:
        ValueError: an unknown ``APCORE_MCP_*`` variable, an unparsable value (the message
            names the variable), or a setting given under its new and its old variable.
    """
    declared = [*options(), *LAUNCH_OPTIONS]
    known = {opt.env_var for opt in declared if opt.env_var} | {old for opt in declared for old in opt.old_env_vars}
    unknown = sorted(key for key in environ if key.startswith(ENV_PREFIX) and key not in known)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown setting (known: {', '.join(sorted(k for k in known if k))})")
    values: dict[str, Any] = {}
    launch: dict[str, Any] = {}
    launch_names = {opt.name for opt in LAUNCH_OPTIONS}
    for opt in declared:
        variable = _variable(opt, environ)
        if variable is None:
            continue
        try:
            value = PARSERS[opt.kind](environ[variable])
        except ValueError as exc:
            raise ValueError(f"{variable}: {exc}") from None
        (launch if opt.name in launch_names else values)[opt.name] = value
    return values, launch


def _variable(opt: Option, environ: Mapping[str, str]) -> str | None:
    """The variable of ``environ`` giving ``opt``: its own, or (warned about) a deprecated one."""
    given = [old for old in opt.old_env_vars if old in environ]
    if opt.env_var is None or not given:
        return opt.env_var if opt.env_var is not None and opt.env_var in environ else None
    if opt.env_var in environ:
        raise ValueError(both_spellings(given[0], opt.env_var))
    warn_renamed(given[0], opt.env_var, operator=True)
    return given[0]


def settings_from_env(environ: Mapping[str, str]) -> tuple[Settings, str]:
    """``(settings, extensions_dir)`` from the environment.

    Raises:
        ValueError: a variable is malformed or invalid; the message names the variable.
    """
    values, launch = env_values(environ)
    try:
        settings = Settings(**values)
    except SettingError as exc:
        raise ValueError(f"{env_name(exc.field)}: {exc}") from None
    return settings, launch.get("extensions_dir", DEFAULT_EXTENSIONS_DIR)


def env_name(field: str) -> str:
    for opt in options():
        if opt.name == field and opt.env_var:
            return opt.env_var
    return field
