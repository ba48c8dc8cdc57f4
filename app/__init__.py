"""Deployment entry point: ``uvicorn app:create_app --factory``.

Reads the ``APCORE_MCP_*`` environment once, discovers the extensions directory and returns
the library's Starlette app. A wrong setting stops the start with a message naming it. Run it
with ``--no-proxy-headers``: the app names the client from forwarded headers itself, trusting
only ``APCORE_MCP_FORWARDED_ALLOW_IPS``.
"""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path

from apcore import Registry
from starlette.applications import Starlette

from apcore_mcp import create_app as create_mcp_app
from apcore_mcp.run.telemetry import TracingConfigError, configure_tracing
from apcore_mcp.settings import configure_logging
from apcore_mcp.settings.env import settings_from_env

logger = logging.getLogger("apcore_mcp.app")


class SettingsError(RuntimeError):
    """A setting in the environment is wrong; the message names it."""


def create_app() -> Starlette:
    try:
        settings, extensions_dir = settings_from_env(os.environ)
    except ValueError as exc:
        raise SettingsError(f"Invalid setting: {exc}") from None
    configure_logging(settings.log_level)
    try:
        configure_tracing(os.environ)  # the OTEL_* variables, when the tracing extra is installed
    except TracingConfigError as exc:
        raise SettingsError(f"Invalid setting: {exc}") from None
    path = Path(extensions_dir)
    if not path.is_dir():
        raise SettingsError(f"Invalid setting: APCORE_MCP_EXTENSIONS_DIR: not a directory: {extensions_dir}")
    if os.environ.get("FORWARDED_ALLOW_IPS") and not settings.forwarded_allow_ips:
        logger.warning(
            "FORWARDED_ALLOW_IPS is uvicorn's variable: the app believes forwarded headers only from the proxies "
            "in APCORE_MCP_FORWARDED_ALLOW_IPS (set that instead, and run uvicorn with --no-proxy-headers)"
        )
    registry = Registry(extensions_dir=str(path))
    count = registry.discover()
    logger.info("Discovered %d module(s) in %s", count, path)
    app = create_mcp_app(registry, settings)
    # This factory owns its worker process, as serve() does: keep what start-up built out of the
    # collector's full passes (they were most of a call's p99), collecting its garbage first.
    gc.collect()
    gc.freeze()
    return app
