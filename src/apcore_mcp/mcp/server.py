"""The low-level MCP server: tools, resources, prompts, completion and logging over one catalog.

Both protocol eras are served by the same ``Server``: 2025-11-25 handshake clients (sessions,
server-to-client requests, ``logging/setLevel``, resource subscriptions) and 2026-07-28
stateless clients (input-required rounds with a sealed ``requestState``, per-request log
levels, ``subscriptions/listen``, caching hints).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types
from apcore import Identity
from mcp.server.caching import CacheHint
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from apcore_mcp._sdk import connection_of, is_sdk_tracing
from apcore_mcp.calls.principal import request_identity
from apcore_mcp.calls.router import CallRouter
from apcore_mcp.mcp.access import ToolAccess
from apcore_mcp.mcp.admission import Refusals
from apcore_mcp.mcp.edge import Edge
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.peer import LogLevels
from apcore_mcp.mcp.prompts import PromptHandlers
from apcore_mcp.mcp.resources import ResourceHandlers, Subscriptions
from apcore_mcp.mcp.skills import RelayedSkills, SkillEndpoints, skill_catalog
from apcore_mcp.mcp.tasks import TaskEndpoints
from apcore_mcp.mcp.tools import ToolHandlers, ToolListCache
from apcore_mcp.mcp.tracing import TracedWhenConfigured
from apcore_mcp.settings import Settings
from apcore_mcp.tasks.records import TASKS_EXTENSION
from apcore_mcp.tasks.runner import TaskRunner
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.prompts import Prompt
from apcore_mcp.tools.skills.catalog import SkillCatalog
from apcore_mcp.tools.views import EXTENSION_ID as APPS_EXTENSION_ID

STATIC_LIST_TTL_MS = 60_000
"""How long list results stay fresh when the catalog cannot change (no ``dynamic``)."""


class ApcoreServer(Server[Any]):
    """A low-level ``Server`` whose default capabilities tell the truth about list changes.

    The Streamable HTTP session manager builds initialization options with no arguments,
    which would advertise ``listChanged: false``; here the default is ``notifications``.
    """

    def __init__(self, name: str, *, version: str, notifications: NotificationOptions, **handlers: Any) -> None:
        with warnings.catch_warnings():
            # logging/setLevel is deprecated in 2026-07-28 but still served to handshake clients.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            super().__init__(name, version=version, **handlers)
        self.notifications = notifications

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or self.notifications
        return super().create_initialization_options(options, experimental_capabilities, extensions)

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """Also the 2025-11-25 ``tasks`` capability (2026-07-28 clients see the tasks extension instead)."""
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        if "tasks/get" in self._request_handlers and protocol_version not in MODERN_PROTOCOL_VERSIONS:
            capabilities.tasks = types.ServerTasksCapability(
                cancel=types.TasksCancelCapability(),
                requests=types.ServerTasksRequestsCapability(
                    tools=types.TasksToolsCapability(call=types.TasksCallCapability())
                ),
            )
        return capabilities


@dataclass
class ServerParts:
    """What ``build_server`` wires together (kept by the bridge for notifications)."""

    server: ApcoreServer
    subscriptions: Subscriptions
    log_levels: LogLevels = field(default_factory=LogLevels)
    admission: Refusals = field(default_factory=Refusals)
    """The limits' refusals the handlers answered (the metrics observe them)."""
    listen: ListenHandler | None = None
    """Serves 2026-07-28 ``subscriptions/listen`` streams (live catalogs only); ``close()`` ends them."""
    skills: SkillCatalog | None = None
    """The skills served (``settings.skills``), read by the explorer and ``skills export``."""

    def end_listen_streams(self) -> None:
        """End every open ``subscriptions/listen`` stream gracefully (its final result sent)."""
        if self.listen is not None:
            self.listen.close()


def cache_hints(live: bool) -> dict[Any, CacheHint]:
    """Truthful freshness: a catalog that can change live is stale at once; a fixed one for a minute."""
    hint = CacheHint(ttl_ms=0 if live else STATIC_LIST_TTL_MS, scope="public")
    read_hint = CacheHint(ttl_ms=0, scope="private")  # resource modules may answer per caller
    return {
        "tools/list": hint,
        "prompts/list": hint,
        "resources/list": hint,
        "resources/templates/list": hint,
        "resources/read": read_hint,
    }


def advertised_input_schema(catalog: ToolCatalog) -> Callable[[str], dict[str, Any] | None]:
    """The ``inputSchema`` ``tools/list`` gives every caller for a tool name (``None``: no such tool)."""

    def lookup(name: str) -> dict[str, Any] | None:
        record = catalog.get(name)
        return record.input_schema if record is not None else None

    return lookup


def request_state_boundary(settings: Settings) -> RequestStateBoundary:
    """Seals ``requestState`` with the configured key ring (the first key seals), or a per-process key."""
    if settings.request_state_keys:
        security = RequestStateSecurity(keys=list(settings.request_state_keys), ttl=settings.request_state_ttl)
    else:
        security = RequestStateSecurity.ephemeral(ttl=settings.request_state_ttl)
    return RequestStateBoundary(security, default_audience=settings.name)


def build_server(
    catalog: ToolCatalog,
    router: CallRouter,
    notifier: ListChangedNotifier,
    settings: Settings,
    *,
    prompts: Mapping[str, Prompt] | None = None,
    access: ToolAccess | None = None,
    tasks: TaskRunner,
    refusal_observers: list[Callable[[str], None]] | None = None,
    relayed_skills: RelayedSkills | None = None,
    skills_over: ToolCatalog | None = None,
) -> ServerParts:
    """An MCP server listing ``catalog`` and calling through ``router``.

    With ``settings.dynamic``, list changes reach clients: handshake-era connections through
    ``notifier`` and 2026-07-28 clients through ``subscriptions/listen``. ``access`` says who
    calls (the request's principal, or its default identity without HTTP) and what they may see.
    ``tasks`` runs the calls started as tasks (the bridge's); ``refusal_observers`` are told each
    refusal (another server's list, to share its metrics).
    """
    live = settings.dynamic
    access = access or ToolAccess()
    log_levels = LogLevels()
    subscriptions = notifier.subscriptions  # what the handlers record, the notifier tells

    def identify(ctx: ServerRequestContext[Any, Any]) -> Identity | None:
        return request_identity(ctx.request, access.default_identity)

    edge = Edge(identify=identify, log_levels=log_levels, input_timeout=settings.input_timeout)
    refusals = Refusals(refusal_observers)
    tools = ToolHandlers(catalog, router, edge, refusals)
    resources = ResourceHandlers(catalog, router, edge, subscriptions, refusals)
    prompt_handlers = PromptHandlers(prompts or {}, edge, resources)

    async def set_logging_level(
        ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> HandlerResult:
        log_levels.set(connection_of(ctx), params.level)
        return {}

    handlers: dict[str, Any] = {
        "on_list_tools": tools.list_tools,
        "on_call_tool": tools.call_tool,
        "on_list_resources": resources.list_resources,
        "on_list_resource_templates": resources.list_templates,
        "on_read_resource": resources.read_resource,
        "on_subscribe_resource": resources.subscribe,
        "on_unsubscribe_resource": resources.unsubscribe,
        "on_completion": prompt_handlers.complete,
        "on_set_logging_level": set_logging_level,
    }
    if prompts:
        handlers.update(on_list_prompts=prompt_handlers.list_prompts, on_get_prompt=prompt_handlers.get_prompt)
    listen = ListenHandler(notifier.bus) if live else None
    server = ApcoreServer(
        settings.name,
        version=settings.server_version(),
        notifications=NotificationOptions(tools_changed=live, resources_changed=live),
        cache_hints=cache_hints(live),
        # Without it the SDK runs a whole tools/list through the middleware for every 2026-07-28
        # tools/call with arguments, to find the schema its Mcp-Param-* headers are checked against.
        # A filtered list differs per caller, and only that listing knows the caller: keep it then.
        get_tool_input_schema=None if access.filter_list else advertised_input_schema(catalog),
        on_subscriptions_listen=listen,
        **handlers,
    )
    server.extensions[APPS_EXTENSION_ID] = {}  # MCP Apps: module views (tools/views.py), under capabilities.extensions
    server.middleware[:] = [TracedWhenConfigured(m) if is_sdk_tracing(m) else m for m in server.middleware]
    if access.active:  # otherwise it passes every request through: one layer less per request
        server.middleware.append(access)  # outermost of ours: filters what the list cache below answers
    server.middleware.append(notifier)
    server.middleware.append(request_state_boundary(settings))
    server.middleware.append(ToolListCache(catalog))
    server.extensions[TASKS_EXTENSION] = {}
    TaskEndpoints(catalog, tasks, edge).install(server)
    # Skills describe the real tools, also in search mode where ``catalog`` holds the meta-tools.
    skills = skill_catalog(skills_over if skills_over is not None else catalog, settings, relayed=relayed_skills)
    if skills is not None:  # innermost: answers skill:// reads after access let them through
        SkillEndpoints(skills, access, ttl_ms=0 if live else STATIC_LIST_TTL_MS).install(server)
    return ServerParts(server, subscriptions, log_levels, refusals, listen, skills)
