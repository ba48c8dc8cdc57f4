"""Server settings: one frozen, validated object shared by ``serve()``, the CLI and the app factory.

Each setting is declared once, with its help text, CLI flag and environment variable (see
``option``), in the module of its concept: ``identity`` (name, version, module filters),
``network``, ``protocol`` (sessions, streams, approval), ``service`` (metrics, explorer,
shutdown), ``limits``, ``logs``, ``replicas``, ``auth`` and ``upstreams``. ``fields`` composes
them into one dataclass, ``checks`` runs each concept's checks in order (``needs``: settings
that mean nothing without another), and ``Settings`` here is the public constructor. The
command line's flags, the environment reader (``settings/env.py``), the docs' reference tables and
``keywords.SettingsOptions`` are all derived from the declarations (``settings/declared.py``).

Imports run one way: ``option`` at the bottom, the concepts above it, then ``fields``,
``needs``, ``checks`` and this module; nothing here imports the server.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Unpack

from apcore_mcp.settings.auth import AUTH_MODES
from apcore_mcp.settings.checks import CHECKS
from apcore_mcp.settings.fields import SettingsFields
from apcore_mcp.settings.identity import MAX_NAME_LENGTH
from apcore_mcp.settings.keywords import SettingsOptions
from apcore_mcp.settings.logs import LOG_LEVELS, configure_logging, normalize_log_level
from apcore_mcp.settings.network import LOOPBACK_HOSTS, WILDCARD_HOSTS, is_loopback_host
from apcore_mcp.settings.option import ENV_PREFIX, Kind, Option, SettingError, both_spellings, option, warn_renamed
from apcore_mcp.settings.protocol import APPROVAL_MODES, TRANSPORTS, Transport, normalize_transport
from apcore_mcp.settings.service import RESERVED_PATHS
from apcore_mcp.settings.upstreams import TOOL_MODES

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
    "SettingsOptions",
    "Transport",
    "configure_logging",
    "is_loopback_host",
    "normalize_log_level",
    "normalize_transport",
    "option",
]

OLD_NAMES: dict[str, str] = {
    old: item.name for item in dataclasses.fields(SettingsFields) for old in item.metadata["spec"]["old_names"]
}
"""Deprecated keyword -> the setting's name now (``option(old_names=...)``)."""


class Settings(SettingsFields):
    """How a server presents, protects and limits itself. Every field is checked on construction.

    Built from keywords, one per setting (``SettingsOptions``); a deprecated name of a setting
    is accepted, with a ``DeprecationWarning``.

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
