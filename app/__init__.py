"""Deployment entry point: ``uvicorn app:create_app --factory``.

Reads the ``APCORE_MCP_*`` environment once, discovers the extensions directory and returns
the library's Starlette app. A wrong setting stops the start with a message naming it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from apcore import Registry
from starlette.applications import Starlette

from apcore_mcp import create_app as create_mcp_app
from apcore_mcp.env import settings_from_env
from apcore_mcp.settings import configure_logging

logger = logging.getLogger("apcore_mcp.app")


class SettingsError(RuntimeError):
    """A setting in the environment is wrong; the message names it."""


def create_app() -> Starlette:
    try:
        settings, extensions_dir = settings_from_env(os.environ)
    except ValueError as exc:
        raise SettingsError(f"Invalid setting: {exc}") from None
    configure_logging(settings.log_level)
    path = Path(extensions_dir)
    if not path.is_dir():
        raise SettingsError(f"Invalid setting: APCORE_MCP_EXTENSIONS_DIR: not a directory: {extensions_dir}")
    registry = Registry(extensions_dir=str(path))
    count = registry.discover()
    logger.info("Discovered %d module(s) in %s", count, path)
    return create_mcp_app(registry, settings)
