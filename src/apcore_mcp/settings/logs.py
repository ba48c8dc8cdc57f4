"""How much the server logs (``log_level``), and applying it (``configure_logging``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from apcore_mcp.settings.option import SettingError, option, set_field

LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True, kw_only=True)
class LogSettings:
    log_level: str | None = option(
        None,
        "`DEBUG`, `INFO`, `WARNING` or `ERROR`; logs go to stderr",
        group="logging",
        kind="choice",
        choices=LOG_LEVELS,
        default_text="logging untouched (`INFO` on the command line)",
    )
    trace_arguments: bool = option(
        False,
        "record each tool call's arguments on its trace span (`gen_ai.tool.call.arguments`: redacted as for "
        "logs, cut at 4 KiB); off, no argument value is in any span",
        group="logging",
        kind="bool",
    )


def normalize_log_level(level: str) -> str:
    value = level.upper() if isinstance(level, str) else level
    if value not in LOG_LEVELS:
        raise ValueError(f"Unknown log level: {level!r}. Must be one of: {', '.join(LOG_LEVELS)}")
    return str(value)


def check_logs(s: LogSettings) -> None:
    if s.log_level is not None:
        try:
            set_field(s, "log_level", normalize_log_level(s.log_level))
        except ValueError as exc:
            raise SettingError("log_level", str(exc)) from None


def configure_logging(level: str | None) -> None:
    """Apply ``log_level``: a stderr handler via ``basicConfig`` and the ``apcore_mcp`` level.

    ``None`` leaves logging untouched: as a library we install nothing by default.
    """
    if level is None:
        return
    numeric = getattr(logging, normalize_log_level(level))
    logging.basicConfig(level=numeric, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apcore_mcp").setLevel(numeric)
