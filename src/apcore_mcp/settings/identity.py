"""Who the server says it is, and which modules of the registry it serves: name, version, tags, prefix,
and whether a module that cannot be served stops the start-up."""

from __future__ import annotations

from dataclasses import dataclass

from apcore_mcp._version import __version__
from apcore_mcp.settings.option import SettingError, as_tuple, option, set_field

MAX_NAME_LENGTH = 255


@dataclass(frozen=True, kw_only=True)
class IdentitySettings:
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
    # -- modules ---------------------------------------------------------------------------------
    strict_modules: bool = option(
        False,
        "a module that cannot be served (a file discovery skips, no input schema, a schema that cannot be "
        "rendered, a definition that fails) stops the start-up, all such problems listed "
        "(default: a WARNING naming each, and the other modules served)",
        group="modules",
        kind="bool",
    )

    def server_version(self) -> str:
        return self.version or __version__


def check_identity(s: IdentitySettings) -> None:
    if not isinstance(s.name, str) or not s.name:
        raise SettingError("name", "name must not be empty")
    if len(s.name) > MAX_NAME_LENGTH:
        raise SettingError("name", f"name must not exceed {MAX_NAME_LENGTH} characters")
    if s.version is not None and (not isinstance(s.version, str) or not s.version):
        raise SettingError("version", "version must not be empty")


def check_filters(s: IdentitySettings) -> None:
    if s.tags is not None:
        tags = as_tuple(s.tags, "tags")
        if any(not isinstance(tag, str) or not tag for tag in tags):
            raise SettingError("tags", "Tag values must not be empty")
        set_field(s, "tags", tags or None)
    if s.prefix is not None and (not isinstance(s.prefix, str) or not s.prefix):
        raise SettingError("prefix", "prefix must not be empty")
