"""Wiring one registry (or executor) to one MCP server: catalog, call router, notifier, prompts."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apcore import Executor, Registry
from apcore.approval import AutoApproveHandler

from apcore_mcp._apcore import executor_approval_handler
from apcore_mcp.bridge.held import held_shown
from apcore_mcp.bridge.workers import for_workers, per_worker
from apcore_mcp.calls.approval import MCPApprovalHandler, mcp_approval_handler
from apcore_mcp.calls.authorization import Authorization, executor_acl
from apcore_mcp.calls.budget import ResultBudget
from apcore_mcp.calls.held import HeldTools
from apcore_mcp.calls.kept_results import KeptResults
from apcore_mcp.calls.limits import CallLimits
from apcore_mcp.calls.person_approval import ApprovalPolicy
from apcore_mcp.calls.principal import parse_scope_rules, stdio_identity
from apcore_mcp.calls.router import CallRouter, Observer
from apcore_mcp.calls.signin import SignIn, public_base
from apcore_mcp.mcp.access import ToolAccess
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.server import ApcoreServer, ServerParts, build_server
from apcore_mcp.pipeline import build_executor
from apcore_mcp.settings import Settings
from apcore_mcp.settings.upstreams import mounts_upstreams
from apcore_mcp.tasks.runner import TaskRunner
from apcore_mcp.tasks.store import MemoryTaskStore
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.problems import ModuleProblemsError
from apcore_mcp.tools.prompts import Prompt, load_prompts
from apcore_mcp.types import registry_of
from apcore_mcp.upstream.config.parse import DEFAULT_TOOLSET, ToolsetSpec, UpstreamConfig
from apcore_mcp.upstream.module import upstream_server_of
from apcore_mcp.upstream.mount import config_of
from apcore_mcp.upstream.skills import SkillShelf
from apcore_mcp.upstream.toolsets import ToolsetSelection

if TYPE_CHECKING:
    from apcore_mcp.tools.search import ToolSearch

logger = logging.getLogger(__name__)


def main_toolset(config: UpstreamConfig, settings: Settings) -> ToolsetSpec:
    """The toolset the main endpoint serves (``settings.toolset``, else the implicit default).

    Raises:
        ValueError: ``settings.toolset`` names no toolset of the config.
    """
    try:
        return config.toolset(settings.toolset or DEFAULT_TOOLSET)
    except KeyError as exc:
        raise ValueError(f"toolset: {exc.args[0]}") from None


def _both(first: Callable[[str], bool], second: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda module_id: first(module_id) and second(module_id)


def executor_for(registry_or_executor: Registry | Executor, settings: Settings) -> Executor:
    """A user's Executor as it is; for a bare Registry, one with the fast, cancellable pipeline
    (``pipeline.build_executor``) and our approval handler.

    ``settings.approval == "auto"`` runs approval-gated modules unconfirmed (an operator's opt-out).
    """
    if isinstance(registry_or_executor, Executor):
        if (own := mcp_approval_handler(registry_or_executor)) is not None:
            own.cover_states_of(settings.request_state_ttl)  # its used-approval record outlives our states
            own.follow_policy(approval_policy(settings))
        return registry_or_executor
    registry = registry_of(registry_or_executor)
    ttl = settings.request_state_ttl
    handler = (
        AutoApproveHandler()
        if settings.approval == "auto"
        else MCPApprovalHandler(state_ttl=ttl, policy=approval_policy(settings))
    )
    return build_executor(
        registry,
        approval_handler=handler,
        sync_workers=settings.sync_workers,
        timeout_ceiling_ms=settings.timeout_ceiling_ms,
    )


def approval_policy(settings: Settings) -> ApprovalPolicy:
    """Who decides approvals, as the settings say (``approval_policy``, ``destructive_approval``)."""
    return ApprovalPolicy(
        default=settings.approval_policy,
        destructive_person=settings.destructive_approval,
        page_base=public_base(settings),
        wait=settings.input_timeout,
        audit_arguments=settings.audit_arguments,
    )


def call_limits(settings: Settings) -> CallLimits:
    """The rate limit and concurrency cap (and one caller's share of it) the settings ask for; with
    several workers each admits its part of the cap, so the machine never runs more than it."""
    return CallLimits(
        rate=settings.rate_limit,
        burst=settings.rate_burst,
        max_concurrent=per_worker(settings.max_concurrent_calls, settings.workers),
        max_caller_share=settings.max_caller_share,
    )


def authorization_for(
    executor: Executor, settings: Settings, limits: CallLimits, catalog: ToolCatalog
) -> Authorization:
    """The one check every module run of this server passes (see ``apcore_mcp.calls.authorization``)."""
    rules = parse_scope_rules(settings.auth_tool_scopes, "auth_tool_scopes")
    return Authorization(
        tool_rules=rules,
        acl=executor_acl(executor),
        limits=limits,
        filter_tools=settings.auth_filter_tools,
        signin=signin_for(settings, catalog),
    )


def signin_for(settings: Settings, catalog: ToolCatalog) -> SignIn | None:
    """Public and protected tools (``calls/signin.py``) when auth is on; a module's own word read from ``catalog``."""
    if settings.auth == "none":
        return None

    def declared(name: str) -> bool | None:
        record = catalog.get(name)
        return record.public if record is not None else None

    # Search mode's meta-tools show each caller what it may see, so the anonymous caller may use them.
    meta_tools: tuple[str, ...] = ()
    if settings.tool_mode == "search":
        from apcore_mcp.bridge.metatools import DESCRIBE_TOOL, INVOKE_TOOL, SEARCH_TOOLS  # as search_front does

        meta_tools = (SEARCH_TOOLS, DESCRIBE_TOOL, INVOKE_TOOL)
    return SignIn.for_settings(settings, declared, always_public=meta_tools)


def result_budget(settings: Settings) -> ResultBudget:
    """The result budget of every call (``calls/budget.py``), with its store of whole results when links are on."""
    links = KeptResults() if settings.result_overflow_links else None
    return ResultBudget(settings.max_result_bytes, settings.minimal_text_with_structured, links)


def task_runner(router: CallRouter, settings: Settings) -> TaskRunner:
    """Tasks kept in memory (the service hands them Redis while the replicas are linked)."""
    store = MemoryTaskStore(max_count=settings.task_max_count, max_bytes=settings.task_max_bytes)
    per_caller = max(1, settings.task_max_count // 2)  # no caller fills the store with running tasks
    return TaskRunner(router, store, ttl=settings.task_ttl, lease=settings.task_lease, max_per_caller=per_caller)


def search_front(
    registry: Registry,
    catalog: ToolCatalog,
    router: CallRouter,
    settings: Settings,
    observers: list[Observer] | None = None,
) -> tuple[ToolSearch, ToolCatalog, CallRouter]:
    """Search mode: the index over ``catalog``, and the catalog and router of the three meta-tools.

    The served list is the meta-tools, constant; the full catalog is only searched, and
    ``invoke_tool`` runs its target through ``router``: authorized and admitted there.
    """
    # Imported here: only search mode pays for the meta-tools' contracts (built at import).
    from apcore_mcp.bridge.metatools import INVOKE_TOOL, meta_registry
    from apcore_mcp.tools.search import ToolSearch

    search = ToolSearch(catalog, server_of=lambda name: upstream_server_of(registry, name))
    meta, meta_executor = meta_registry(search, router)
    served = ToolCatalog(meta)
    served.load()
    front = CallRouter(
        meta_executor,
        served,
        max_output_bytes=settings.max_output_bytes,
        authorization=router.authorization,
        dispatchers=(INVOKE_TOOL,),
        validate_inputs=settings.validate_inputs,
        trace_arguments=settings.trace_arguments,
        observers=observers,
        budget=router.budget,
    )
    return search, served, front


@dataclass(frozen=True, kw_only=True, eq=False)
class Bridge:
    """The wiring of one served registry: built by ``Bridge.build``, immutable, with nothing to close.

    What lives and dies while it is served (following the registry, the Executor's pool, the
    notifier's loop, upstream servers, the replicas' link) belongs to the ``BridgeService``
    (``apcore_mcp.bridge.service``) that the hosting runner enters.
    """

    registry: Registry
    executor: Executor
    settings: Settings
    catalog: ToolCatalog
    """What the server lists: every served module, or in search mode the three meta-tools."""
    full_catalog: ToolCatalog
    """Every served module (``catalog`` itself outside search mode); the one that follows the registry."""
    router: CallRouter
    notifier: ListChangedNotifier
    parts: ServerParts
    access: ToolAccess
    tasks: TaskRunner
    """Runs the calls started as tasks, while the bridge's service serves it (``TaskRunner.served``)."""
    prompts: dict[str, Prompt] = field(default_factory=dict)
    owns_executor: bool = False
    """The bridge built the Executor (from a bare Registry), so its services lease its sync pool."""
    search: ToolSearch | None = None
    """Tool-search mode: the index over every tool (``catalog`` then holds the three meta-tools)."""
    upstream_config: UpstreamConfig | None = None
    """The ``mcp.json`` of ``settings.mcp_config``, as read at build (servers mount when serving starts)."""
    selection: ToolsetSelection | None = None
    """The main endpoint's selection when a config is in use (updated on reload)."""
    limits: CallLimits = field(default_factory=CallLimits)
    """The rate limit and concurrency cap every module run of this server is admitted by."""
    authorization: Authorization = field(default_factory=Authorization)
    """The check the router runs on every module it is about to run (tool scopes, then ``limits``)."""
    skill_shelf: SkillShelf = field(default_factory=SkillShelf)
    """The upstream servers' skills, relayed there while they are mounted, served with the rest."""
    held: HeldTools = field(default_factory=HeldTools)
    """The upstream tools held from their pins, filled by the service's upstreams; its routers name their drift."""

    @property
    def server(self) -> ApcoreServer:
        return self.parts.server

    @classmethod
    def build(
        cls,
        registry_or_executor: Registry | Executor,
        settings: Settings | None = None,
        *,
        include: Callable[[str], bool] | None = None,
        limits: CallLimits | None = None,
        observed_with: Bridge | None = None,
    ) -> Bridge:
        """Convert every module once (following the registry is the service's, see ``BridgeService``).

        ``include`` narrows the served modules further (a toolset's selection, see
        ``apcore_mcp.upstream.toolsets.toolset_filter``). ``limits`` shares another server's rate
        limit and concurrency cap (the per-toolset endpoints share the main one's). Every route
        to a module of this server runs it through ``router`` (in search mode, ``invoke_tool``
        through the router over the full catalog), whose ``authorization`` checks it first.
        ``observed_with``: another bridge whose observers (metrics, ``serve()``'s collector) are told
        of this one's calls and refusals too (a toolset's calls are its server's).

        Raises:
            TypeError: not a Registry or an Executor.
            PromptFileError: a prompt file in ``settings.prompts_dir`` is malformed.
            ModuleProblemsError: ``settings.strict_modules`` and a module that cannot be served.
        """
        settings = for_workers(settings or Settings())
        registry = registry_of(registry_or_executor)
        upstream_config, selection, given = None, None, include
        if mounts_upstreams(settings):
            # Upstream tools register once their servers mount (when serving starts): follow the registry.
            settings = settings.replace(dynamic=True)
            upstream_config = config_of(settings, os.environ)
            selection = ToolsetSelection(registry, main_toolset(upstream_config, settings))
            include = selection if include is None else _both(include, selection)
        executor = executor_for(registry_or_executor, settings)
        prompts = load_prompts(settings.prompts_dir) if settings.prompts_dir else {}
        catalog = ToolCatalog(registry, tags=settings.tags, prefix=settings.prefix, include=include)
        catalog.load()  # with settings.dynamic, the service follows the registry from when it starts
        if settings.strict_modules and catalog.problems():
            raise ModuleProblemsError(catalog.problems())
        limits = limits if limits is not None else call_limits(settings)
        authorization = authorization_for(executor, settings, limits, catalog)
        # Shared lists, handed over at construction: nothing is re-pointed after the build.
        observers = observed_with.router.observers if observed_with is not None else None
        budget = observed_with.router.budget if observed_with is not None else result_budget(settings)
        searching = settings.tool_mode == "search"
        held = observed_with.held if observed_with is not None else HeldTools()  # one per served registry
        router = CallRouter(
            executor,
            catalog,
            max_output_bytes=settings.max_output_bytes,
            authorization=authorization,
            validate_inputs=settings.validate_inputs,
            trace_arguments=settings.trace_arguments,
            observers=None if searching else observers,  # in search mode the front router is observed
            budget=budget,
            held=held,
            held_shown=held_shown(settings, (given, selection)),
        )
        search: ToolSearch | None = None
        served = catalog
        if searching:
            search, served, router = search_front(registry, catalog, router, settings, observers)
        notifier = ListChangedNotifier(resources_follow_tools=settings.skills)  # skill:// files follow the tools
        access = ToolAccess(authorization, default_identity=stdio_identity(settings))
        tasks = task_runner(router, settings)
        refusal_observers = observed_with.parts.admission.observers if observed_with is not None else None
        skill_shelf = SkillShelf()  # filled by the service's upstreams (bridge/upstreams.py) while they are mounted
        parts = build_server(
            served,
            router,
            notifier,
            settings,
            prompts=prompts,
            access=access,
            tasks=tasks,
            refusal_observers=refusal_observers,
            relayed_skills=skill_shelf,
            skills_over=catalog,
        )
        bridge = cls(
            registry=registry,
            executor=executor,
            settings=settings,
            catalog=served,
            full_catalog=catalog,
            router=router,
            notifier=notifier,
            parts=parts,
            access=access,
            tasks=tasks,
            prompts=prompts,
            owns_executor=not isinstance(registry_or_executor, Executor),
            search=search,
            upstream_config=upstream_config,
            selection=selection,
            limits=limits,
            authorization=authorization,
            skill_shelf=skill_shelf,
            held=held,
        )
        # Upstream tools mount when the service starts, after this: the start line counts them.
        if not len(catalog) and not catalog.resource_records() and upstream_config is None:
            logger.warning("No modules registered; server starting with zero tools")
        bridge._warn_about_approval(registry_or_executor)
        return bridge

    def refilter(self) -> None:
        """Re-read the catalog (its toolset selection may have changed); announce a changed tool list."""
        before = self.full_catalog.records()
        self.full_catalog.load()
        if self.search is None and self.full_catalog.records() != before:
            self.notifier.changed(tools=True)

    def _warn_about_approval(self, source: Registry | Executor) -> None:
        gated = [record.name for record in self.catalog.records() if record.requires_approval]
        if self.settings.approval == "auto":
            logger.warning(
                "Approval is off (approval=auto): %d tool(s) that require approval run unconfirmed: %s",
                len(gated),
                ", ".join(gated) or "none now",
            )
        elif gated and isinstance(source, Executor) and executor_approval_handler(source) is None:
            logger.warning(
                "Your Executor has no approval handler, so apcore runs these tools unconfirmed: %s. "
                "Give it one: executor.set_approval_handler(apcore_mcp.MCPApprovalHandler())",
                ", ".join(gated),
            )
        alone = self.settings.redis_url is None and self.settings.workers == 1  # workers share a record
        policy = handler.policy if (handler := mcp_approval_handler(self.executor)) is not None else None
        asked = [record for record in self.catalog.records() if record.requires_approval]
        person = [r.name for r in asked if policy is not None and policy.for_module(r.annotations) == "person"]
        if person and self.settings.redis_url is not None:  # workers of one machine share their desk
            logger.warning(
                "A person approves %s on the approval page of the process that asked: with several "
                "replicas, route /approvals/ to that process (or the call times out, refused)",
                ", ".join(person),
            )
        if self.settings.request_state_keys and alone and self.settings.approval != "auto":
            # Shared sealing keys mean several replicas (or restarts); each keeps its own record.
            logger.warning(
                "request_state_keys are set without redis_url: each process remembers alone which 2026-07-28 "
                "approvals were used, so one could be replayed once on another replica or after a restart; "
                "set redis_url to share the record"
            )
