"""The order ``Settings`` checks its fields in on construction (``CHECKS``), and what each check is given.

Each concept checks its own fields (``check_network``, ``check_auth``...); a check that depends
on another concept's settings is handed them here, by name. Each raises
``SettingError(field, message)``; a check may normalise a value in place.
"""

from __future__ import annotations

from collections.abc import Callable

from apcore_mcp.settings.auth import check_auth
from apcore_mcp.settings.fields import SettingsFields
from apcore_mcp.settings.identity import check_filters, check_identity
from apcore_mcp.settings.limits import check_limits, check_traffic
from apcore_mcp.settings.logs import check_logs
from apcore_mcp.settings.needs import check_needs
from apcore_mcp.settings.network import check_network
from apcore_mcp.settings.option import set_field
from apcore_mcp.settings.protocol import check_protocol
from apcore_mcp.settings.replicas import check_replicas
from apcore_mcp.settings.service import check_service
from apcore_mcp.settings.upstreams import check_upstreams


def _check_replicas(s: SettingsFields) -> None:
    check_replicas(s, dynamic=s.dynamic)
    if s.workers > 1:
        # A handshake-era session lives in the memory of the worker that opened it, and the kernel
        # hands each connection to any worker: several workers serve those clients stateless.
        set_field(s, "stateless", True)


def _check_auth(s: SettingsFields) -> None:
    check_auth(s, wildcard_host=s.is_wildcard, execute_token=s.execute_token)


CHECKS: tuple[Callable[[SettingsFields], None], ...] = (
    check_identity,
    check_filters,
    check_network,
    check_protocol,
    check_service,
    check_logs,
    check_limits,
    _check_replicas,
    check_traffic,
    _check_auth,
    check_upstreams,
    check_needs,  # last: each rule reads settings the checks above normalised
)
