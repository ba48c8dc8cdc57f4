"""``apcore-mcp`` / ``python -m apcore_mcp``: discover an extensions directory and serve it.

Every flag comes from a ``Settings`` declaration (or a launch option); ``APCORE_MCP_*``
variables give the defaults, flags override them. Exit codes: 0 normal shutdown, 1 invalid
arguments, 2 usage error or start-up failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from apcore_mcp.run.version import version_text
from apcore_mcp.settings import MAX_NAME_LENGTH, Option, SettingError
from apcore_mcp.settings.declared import default_of, options
from apcore_mcp.settings.env import LAUNCH_OPTIONS, env_values, parse_list
from apcore_mcp.settings.option import both_spellings, old_spellings_note, warn_renamed

if TYPE_CHECKING:
    from apcore import Registry

logger = logging.getLogger(__name__)

EXIT_INVALID = 1
EXIT_STARTUP = 2
CLI_LOG_LEVEL = "INFO"


def _list_arg(value: str) -> list[str]:
    """``a,b`` or a repeated flag: both accumulate (an empty value stays, to be refused)."""
    return [part.strip() for part in value.split(",")] if value.strip() else [""]


def _default_text(opt: Option) -> str:
    if opt.default_text is not None:
        return opt.default_text
    if opt.group == "launch":
        return ""
    default = default_of(opt.name)
    if opt.kind == "bool":
        return ""
    if default is None or default == ():
        return "none"
    return f"`{default}`"


class UsageError(ValueError):
    """Invalid arguments; ``code`` is the exit status the CLI gives them."""

    def __init__(self, message: str, code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.code = code


class _RaisingParser(argparse.ArgumentParser):
    """Usage errors raise ``UsageError`` instead of exiting: for callers that are not the CLI's process."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, EXIT_STARTUP)


def build_parser(*, raising: bool = False) -> argparse.ArgumentParser:
    """The CLI's parser; ``raising``: a usage error raises ``UsageError`` (the CLI prints and exits)."""
    parser = (_RaisingParser if raising else argparse.ArgumentParser)(
        prog="apcore-mcp",
        description="Serve the apcore modules of an extensions directory as MCP tools. "
        "APCORE_MCP_* environment variables set defaults; flags override them.",
    )
    parser.add_argument("--version", action=_PrintVersion, help="print the version and exit")
    for opt in [*LAUNCH_OPTIONS, *options()]:
        if opt.flag is None:
            continue
        _add(parser, opt, opt.flag, opt.name, _help(opt))
        for old, old_flag in zip(opt.old_names, opt.old_flags, strict=True):
            _add(parser, opt, old_flag, _old_dest(old), argparse.SUPPRESS)
    return parser


class _PrintVersion(argparse.Action):
    """``--version``: the version line as is (argparse's own action rewraps it at the terminal width)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(version_text())
        parser.exit()


def _old_dest(old: str) -> str:
    return f"old:{old}"


def _help(opt: Option) -> str:
    assert opt.flag is not None
    default_text = _default_text(opt)
    help_text = opt.help.replace("`", "").replace("%", "%%")
    if opt.kind == "bool" and opt.flag.startswith("--no-"):
        help_text = f"do not {help_text}"
    if default_text and default_text != "none":
        help_text += f" (default: {default_text.replace('`', '')})"
    return help_text + old_spellings_note(opt.old_flags).replace("`", "")


def _add(parser: argparse.ArgumentParser, opt: Option, flag: str, dest: str, help_text: str) -> None:
    common: dict[str, Any] = {"dest": dest, "help": help_text, "default": None}
    if opt.kind == "bool":
        negated = flag.startswith("--no-")
        parser.add_argument(flag, action="store_false" if negated else "store_true", **common)
    elif opt.kind == "list":
        parser.add_argument(flag, type=_list_arg, action="extend", metavar=opt.metavar or "VALUE", **common)
    elif opt.kind == "choice":
        parser.add_argument(flag, choices=opt.choices, **common)
    else:
        kind = {"int": int, "float": float}.get(opt.kind, str)
        parser.add_argument(flag, type=kind, metavar=opt.metavar, **common)


def _fail(message: str, code: int) -> NoReturn:
    print(f"Error: {message}", file=sys.stderr)
    raise SystemExit(code)


@dataclass(frozen=True)
class Launch:
    """What a command line asks for: ``Settings`` values, launch values and the extensions directory."""

    values: dict[str, Any]
    launch: dict[str, Any]
    extensions_dir: Path


def parse_launch(argv: Sequence[str] | None, environ: Mapping[str, str], *, raising: bool = False) -> Launch:
    """Flags over ``APCORE_MCP_*`` variables, checked as the CLI checks them.

    Raises:
        UsageError: invalid arguments (with ``raising``, also what argparse itself refuses).
    """
    args = build_parser(raising=raising).parse_args(argv)
    values, launch = _resolve(args, environ)
    return Launch(values, launch, _check_args(values, launch))


def discovered_registry(extensions_dir: Path, *, strict: bool = False) -> Registry:
    """A Registry of the modules of ``extensions_dir``, as the CLI discovers them.

    Raises:
        DiscoveryError: the directory cannot be read.
        ModuleProblemsError: ``strict`` and a module that cannot be served.
    """
    from apcore import Registry

    from apcore_mcp.tools.discovery import discover, refuse_problems

    registry = Registry(extensions_dir=str(extensions_dir))
    found = discover(registry, extensions_dir)  # each file it skips is a WARNING naming it
    logger.info("Discovered %d module(s) in %s", found.count, extensions_dir)
    if strict:
        refuse_problems(found, registry)
    return registry


def _resolve(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Settings values and launch values: flags over ``APCORE_MCP_*`` variables."""
    try:
        values, launch = env_values(environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for opt in options():
        _take_old_flags(args, opt)
        given = getattr(args, opt.name, None)
        if given is not None:
            values[opt.name] = tuple(given) if opt.kind == "list" else given
    for opt in LAUNCH_OPTIONS:
        given = getattr(args, opt.name, None)
        if given is not None:
            launch[opt.name] = given
    values.setdefault("log_level", CLI_LOG_LEVEL)
    return values, launch


def _take_old_flags(args: argparse.Namespace, opt: Option) -> None:
    """A deprecated flag of ``opt`` stands for its new one, with a warning; both at once is an error."""
    for old, old_flag in zip(opt.old_names, opt.old_flags, strict=True):
        given = getattr(args, _old_dest(old), None)
        if given is None:
            continue
        if getattr(args, opt.name, None) is not None:
            raise UsageError(both_spellings(old_flag, str(opt.flag)))
        warn_renamed(old_flag, str(opt.flag), operator=True)
        setattr(args, opt.name, given)


def _check_args(values: dict[str, Any], launch: dict[str, Any]) -> Path:
    """The SRS's CLI messages (FR-CLI), checked before anything starts."""
    if "extensions_dir" not in launch:
        raise UsageError(
            "the following arguments are required: --extensions-dir (or APCORE_MCP_EXTENSIONS_DIR)", EXIT_STARTUP
        )
    path = Path(launch["extensions_dir"])
    if not path.exists():
        raise UsageError(f"extensions directory does not exist: {path}")
    if not path.is_dir():
        raise UsageError(f"extensions path is not a directory: {path}")
    port = values.get("port", default_of("port"))
    if not 0 <= port <= 65535:
        raise UsageError("port must be between 0 (any free port) and 65535")
    name = values.get("name", default_of("name"))
    if not name:
        raise UsageError("server name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise UsageError(f"server name must not exceed {MAX_NAME_LENGTH} characters")
    return path


def flag_of(field: str) -> str:
    for opt in options():
        if opt.name == field and opt.flag:
            return opt.flag
    return field


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["pins"]:  # a subcommand of its own: it serves nothing (run/pins.py)
        from apcore_mcp.run.pins import pins_main

        sys.exit(pins_main(args[1:], environ))
    if args[:1] == ["skills"]:  # writes the skills as files, serves nothing (run/skills.py)
        from apcore_mcp.run.skills import skills_main

        sys.exit(skills_main(args[1:], environ))
    try:
        parsed = parse_launch(argv, os.environ if environ is None else environ)
    except UsageError as exc:
        _fail(str(exc), exc.code)
    values, launch = parsed.values, parsed.launch

    from apcore_mcp._redaction import RedactedLogs
    from apcore_mcp.run.serve import serve
    from apcore_mcp.run.workers import serve_workers
    from apcore_mcp.settings import configure_logging
    from apcore_mcp.settings.replicas import worker_count
    from apcore_mcp.tools.discovery import DiscoveryError
    from apcore_mcp.tools.problems import ModuleProblemsError

    transport = launch.get("transport", "stdio")
    try:
        configure_logging(values["log_level"])
    except ValueError as exc:
        _fail(str(exc), EXIT_INVALID)
    try:
        registry = discovered_registry(parsed.extensions_dir, strict=bool(values.get("strict_modules")))
        with RedactedLogs():  # every transport: no credential in a log line (the HTTP app's lifespan does it too)
            if worker_count(values.get("workers", 1)) > 1:
                del registry  # discovered to refuse a broken directory now; each worker discovers its own
                serve_workers(parsed.extensions_dir, values, transport=transport)
            else:
                serve(registry, transport=transport, **values)
    except (DiscoveryError, ModuleProblemsError) as exc:
        _fail(str(exc), EXIT_STARTUP)
    except SettingError as exc:
        _fail(f"{flag_of(exc.field)}: {exc}", EXIT_INVALID)
    except ValueError as exc:
        _fail(str(exc), EXIT_INVALID)
    except OSError as exc:
        host, port = values.get("host", default_of("host")), values.get("port", default_of("port"))
        _fail(f"cannot start the server on {host}:{port}: {exc.strerror or exc}", EXIT_STARTUP)
    except KeyboardInterrupt:
        pass


__all__ = ["Launch", "UsageError", "build_parser", "discovered_registry", "main", "parse_launch", "parse_list"]
