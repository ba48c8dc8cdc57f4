"""Every setting in one frozen dataclass, composed from the concepts: ``settings.port``, ``settings.auth``.

The concepts are listed last-first: a dataclass orders the fields of its bases from the last
base to the first, so the fields (and the flags, variables and tables derived from them) come
in the order identity, network, protocol, service, limits, logs, replicas, auth, upstreams.
"""

from __future__ import annotations

from dataclasses import dataclass

from apcore_mcp.settings.auth import AuthSettings
from apcore_mcp.settings.identity import IdentitySettings
from apcore_mcp.settings.limits import LimitSettings
from apcore_mcp.settings.logs import LogSettings
from apcore_mcp.settings.network import NetworkSettings
from apcore_mcp.settings.protocol import ProtocolSettings
from apcore_mcp.settings.replicas import ReplicaSettings
from apcore_mcp.settings.service import ServiceSettings
from apcore_mcp.settings.upstreams import UpstreamSettings


@dataclass(frozen=True, kw_only=True)
class SettingsFields(
    UpstreamSettings,
    AuthSettings,
    ReplicaSettings,
    LogSettings,
    LimitSettings,
    ServiceSettings,
    ProtocolSettings,
    NetworkSettings,
    IdentitySettings,
):
    """How a server presents, protects and limits itself: the declarations (``Settings`` checks them)."""
