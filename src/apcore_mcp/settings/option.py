"""How a setting is declared (``option``), its error type, and the helpers every concept's checks share.

The bottom of the settings package: each concept module (``identity``, ``network``, ...)
declares its settings with ``option`` and checks them with these helpers.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

logger = logging.getLogger(__name__)

ENV_PREFIX = "APCORE_MCP_"

Kind = Literal["str", "int", "float", "bool", "list", "choice"]


class SettingError(ValueError):
    """A setting has a bad value; ``field`` names it so each entry point can name its own spelling."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Option:
    """How one setting is spelled on the command line and in the environment, and what it means."""

    name: str
    help: str
    group: str
    kind: Kind
    flag: str | None
    env: str | None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    secret: bool = False
    default_text: str | None = None
    """How the default is shown in the docs when ``repr`` of the value would mislead."""
    old_names: tuple[str, ...] = ()
    """Deprecated names still accepted, each spelled like the new one: keyword, flag, variable."""

    @property
    def env_var(self) -> str | None:
        return None if self.env is None else ENV_PREFIX + self.env

    @property
    def old_flags(self) -> tuple[str, ...]:
        if self.flag is None:
            return ()
        start = "--no-" if self.flag.startswith("--no-") else "--"
        return tuple(start + old.replace("_", "-") for old in self.old_names)

    @property
    def old_env_vars(self) -> tuple[str, ...]:
        return () if self.env is None else tuple(ENV_PREFIX + old.upper() for old in self.old_names)


def option(
    default: Any,
    help: str,
    *,
    group: str,
    kind: Kind = "str",
    flag: str | None = "",
    env: str | None = "",
    choices: Sequence[str] = (),
    metavar: str | None = None,
    secret: bool = False,
    default_text: str | None = None,
    old_names: Sequence[str] = (),
) -> Any:
    """A dataclass field carrying its ``Option``; ``flag``/``env`` default to names derived from the field.

    ``flag=None`` or ``env=None`` keeps a setting off the command line or out of the environment.
    ``old_names`` are the setting's deprecated names: each is still accepted, with a warning, as a
    keyword, a flag and a variable spelled from it (``scope``: ``--scope``, ``APCORE_MCP_SCOPE``).
    """
    meta = {
        "spec": {
            "help": help,
            "group": group,
            "kind": kind,
            "flag": flag,
            "env": env,
            "choices": tuple(choices),
            "metavar": metavar,
            "secret": secret,
            "default_text": default_text,
            "old_names": tuple(old_names),
        }
    }
    return field(default=default, metadata=meta)


def warn_renamed(old: str, new: str, *, operator: bool = False, stacklevel: int = 3) -> None:
    """A deprecated spelling was used: a ``DeprecationWarning`` (and, for an ``operator``, a logged WARNING).

    An operator's command line, environment or config file is not a program run with warnings
    shown, hence the log line; ``stacklevel`` counts from the caller of this function.
    """
    message = f"{old} is deprecated: it is now {new}"
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)
    if operator:
        logger.warning(message)


def old_spellings_note(spellings: Sequence[str]) -> str:
    """`` (deprecated old name: `--scope`)`` for the docs' tables, or nothing."""
    return f" (deprecated old name: {', '.join(f'`{old}`' for old in spellings)})" if spellings else ""


def both_spellings(old: str, new: str) -> str:
    """The message for a setting given under its name and its deprecated old name at once."""
    return f"{new} and {old} (its deprecated old name) are both given: keep {new}"


def set_field(settings: object, name: str, value: object) -> None:
    """Normalize a field of a frozen settings object while it is being checked."""
    object.__setattr__(settings, name, value)


def check_positive(settings: object, name: str) -> None:
    """A field that must be a number above zero (``True`` is not a number here)."""
    value = getattr(settings, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise SettingError(name, f"{name} must be a positive number, got {value!r}")


def check_whole(settings: object, name: str, minimum: int) -> None:
    """A field that must be an integer of at least ``minimum`` (``True`` is not one here)."""
    value = getattr(settings, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SettingError(name, f"{name} must be an integer >= {minimum}, got {value!r}")


def as_tuple(values: Sequence[str] | str | None, what: str) -> tuple[str, ...]:
    """A list setting as the tuple it is stored as (a lone string is refused, not split)."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise SettingError(what, f"{what} must be a list of strings, not a single string")
    return tuple(values)
