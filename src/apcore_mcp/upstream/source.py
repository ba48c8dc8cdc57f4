"""One upstream server mounted into an apcore ``Registry``: its tools as modules, kept in step with it.

``open`` acquires the server from the pool, lists its tools and registers one
``UpstreamTool`` per tool as ``<server>.<tool>``; a ``list_changed`` from the server (or a
restart) lists them again and registers or unregisters the difference, which a live
``ToolCatalog`` turns into our own ``list_changed``. ``close`` unregisters them and releases
the server. Calls go through the shared lease, or through a lease of their own per
principal or per session when the server's ``sharing`` asks for it.

What the upstream sends back during a call reaches our client only through the
``apcore_mcp.calls.context`` helpers: progress through ``report_progress``, elicitation and
sampling through ``request_inputs``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from apcore import Context, Registry
from apcore.errors import InvalidInputError

from apcore_mcp.calls.context import InputRequired, call_context, report_progress, request_inputs
from apcore_mcp.calls.held import HeldTools
from apcore_mcp.tools.skills.model import Skill
from apcore_mcp.upstream.config.parse import ServerSpec
from apcore_mcp.upstream.errors import UpstreamCredentialsError, UpstreamCredentialsRefused
from apcore_mcp.upstream.handles import Lease, UpstreamPool
from apcore_mcp.upstream.held import report_held
from apcore_mcp.upstream.module import UpstreamTool
from apcore_mcp.upstream.names import module_ids, server_segment
from apcore_mcp.upstream.pins.keeper import PinKeeper, warn_unpinned
from apcore_mcp.upstream.skills import SkillShelf, advertises_skills, fetch_skills, relay_skills
from apcore_mcp.upstream.token_exchange.exchange import TokenExchanger, caller_key

logger = logging.getLogger(__name__)

PRIVATE_IDLE_SECONDS = 300.0
"""A per-principal or per-session server unused this long is released (and stopped)."""
MAX_PRIVATE = 256
"""Per-caller connections one server keeps at most: past it the least recently used idle ones are released
(calls in flight keep theirs, so the count exceeds it only by the calls running at that moment)."""
ANONYMOUS = "anonymous"
MAX_EXCHANGE_SECONDS = 10.0
"""A token exchange request ends after half the entry's ``timeout``, and never after more than this."""


@dataclass(eq=False)
class _Private:
    """A per-principal or per-session lease of this server: when it was last used, how many calls run on it."""

    lease: Lease
    used: float
    busy: int = 0


class CallAsker:
    """Forwards the upstream's questions for one call to our client (``context.request_inputs``).

    Keys are numbered in asking order, so a 2026-07-28 client retrying our call finds its
    answers under the same keys when the upstream asks the same questions again. When our
    client must be asked in a new round, the ``InputRequired`` is kept and raised once the
    upstream call has returned (it may be raised in a task that is not the call's own).
    """

    def __init__(self, context: Context, prefix: str) -> None:
        self._context = context
        self._prefix = prefix
        self._asked = 0
        self.deferred: InputRequired | None = None

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
        if self.deferred is not None:
            return dict.fromkeys(requests)
        keyed: dict[str, str] = {}
        for key in requests:
            self._asked += 1
            keyed[f"{self._prefix}{self._asked}-{key}"] = key
        try:
            answers = await request_inputs(self._context, {ours: requests[theirs] for ours, theirs in keyed.items()})
        except InputRequired as needed:
            self.deferred = needed
            return dict.fromkeys(requests)
        return {theirs: answers.get(ours) for ours, theirs in keyed.items()}

    def raise_deferred(self) -> None:
        if self.deferred is not None:
            raise self.deferred


class _Progress:
    """The upstream's progress for one call, passed on to our client."""

    def __init__(self, context: Context) -> None:
        self._context = context

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await report_progress(self._context, progress, total, message)


def principal_of(context: Context, sharing: str) -> str | None:
    """The handle key's principal part for a call: ``None`` for a shared server.

    ``per-session`` uses the call's ``session_id`` when the edge provides one (falling back
    to the principal: a stateless transport has no session worth keying on).
    """
    if sharing == "shared":
        return None
    if sharing == "per-session":
        session = getattr(call_context(context), "session_id", None)
        if session:
            return f"session:{session}"
    identity = getattr(context, "identity", None)
    return f"principal:{getattr(identity, 'id', None) or ANONYMOUS}"


class UpstreamSource:
    """One upstream server's tools in ``registry`` (see the module doc)."""

    def __init__(
        self,
        spec: ServerSpec,
        pool: UpstreamPool,
        registry: Registry,
        *,
        segment: str | None = None,
        pins: PinKeeper | None = None,
        skills: SkillShelf | None = None,
        held: HeldTools | None = None,
    ) -> None:
        self.spec = spec
        self.held = held
        """Told which listed tools the pins hold, so a call can name the drift (``calls/held.py``)."""
        self.skills = skills
        """Where this server's skills go, when it offers them (``upstream/skills``; ``None``: not relayed)."""
        self.pins = pins
        """Which listed tools are served (``upstream/pins``): a drifted or unapproved tool is never registered."""
        self.segment = segment or server_segment(spec.name)
        """The first segment of this server's module ids (``names.server_segments`` over the config)."""
        self.pool = pool
        self.registry = registry
        self._lease: Lease | None = None
        self._private: dict[str, _Private] = {}
        self.max_private = MAX_PRIVATE
        self.exchanger = _exchanger(spec)
        """Exchanges each caller's token for the upstream's (``auth`` entries; ``None`` otherwise)."""
        self._modules: dict[str, UpstreamTool] = {}
        self._refresh_lock = anyio.Lock()
        self._refresh_wanted = False
        self._unlisten: Callable[[], None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def module_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._modules))

    # -- lifecycle -------------------------------------------------------------------------------

    async def open(self) -> None:
        """Acquire the server and register its tools.

        Raises:
            UpstreamUnavailable: it could not be started or did not list its tools.
        """
        lease = await self.pool.acquire(self.spec)
        self._lease = lease
        warn_unpinned(self.pins, self.name, pin=self.spec.pin)
        try:
            await self._sync_all(await lease.list_tools())
        except BaseException:
            await self.close()
            raise
        self._unlisten = lease.on_tools_changed(self._tools_changed)
        logger.info("Upstream %r mounted: %d tool(s)", self.name, len(self._modules))

    async def close(self) -> None:
        """Unregister every tool and release the server (and any private ones). Idempotent."""
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        for module_id in list(self._modules):
            self._unregister(module_id)
        if self.pins is not None:
            self.pins.forget(self.name)
        if self.held is not None:
            self.held.drop(self.name)
        if self.skills is not None:
            self.skills.drop(self.name)
        private, self._private = list(self._private.values()), {}
        for entry in private:
            await self.pool.release(entry.lease)
        shared, self._lease = self._lease, None
        if shared is not None:
            await self.pool.release(shared)

    def update_spec(self, spec: ServerSpec) -> None:
        """Take settings that do not need a restart (timeout, description) from a reloaded config."""
        self.spec = spec

    # -- tools -----------------------------------------------------------------------------------

    async def refresh(self) -> None:
        """List the tools again and register the difference; a failure keeps the tools we had."""
        self._refresh_wanted = True
        async with self._refresh_lock:
            if not self._refresh_wanted or self._lease is None:
                return  # a refresh that started after this one was asked for has done the work
            self._refresh_wanted = False
            await self._sync_all(await self._lease.list_tools())

    async def listed_tools(self) -> list[types.Tool]:
        """The server's tools as it lists them now, served or held (for ``pins diff``)."""
        if self._lease is None:
            raise RuntimeError(f"upstream source {self.name!r} is not open")
        return await self._lease.list_tools()

    def _tools_changed(self) -> None:
        self.pool.spawn(self._refresh_quietly)

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except Exception as exc:  # noqa: BLE001 - a background refresh's edge: keep serving the old list
            logger.warning("Upstream %r: tools not refreshed (%s)", self.name, type(exc).__name__)

    async def _sync_all(self, tools: list[types.Tool]) -> None:
        """The tools, then the skills that describe them (fetched again whenever the tools are listed)."""
        self._sync(tools)
        if self.skills is not None and self._lease is not None:
            connection = await self._lease.connection()
            await relay_skills(self.skills, connection, self.name, self.segment, tools, self._admit_skills)

    def _admit_skills(self, skills: list[Skill]) -> list[Skill]:
        """The relayed skills that match their pins (all of them when pinning is off)."""
        if self.pins is None:
            return skills
        return self.pins.skill_pins.admit(self.name, skills, pin=self.spec.pin)

    async def listed_skills(self) -> list[Skill] | None:
        """The server's skills that pass the relay's checks now, served or held (for ``pins diff``);
        ``None`` when it does not offer skills."""
        if self._lease is None:
            raise RuntimeError(f"upstream source {self.name!r} is not open")
        connection = await self._lease.connection()
        if not advertises_skills(connection):
            return None
        return await fetch_skills(connection, self.name, self.segment, await self.listed_tools())

    def _sync(self, tools: list[types.Tool]) -> None:
        every = [tool.name for tool in tools]
        if self.pins is not None:
            tools = self.pins.admit(self.name, tools, pin=self.spec.pin)
        report_held(self.held, self.pins, self.name, self.segment, every)
        listed = {tool.name: tool for tool in tools}
        ids = module_ids(self.segment, listed)
        wanted = {ids[name]: tool for name, tool in listed.items()}
        for module_id, module in list(self._modules.items()):
            tool = wanted.get(module_id)
            if tool is None or tool.model_dump_json(by_alias=True, exclude_none=True) != module.fingerprint:
                self._unregister(module_id)
        for module_id, tool in wanted.items():
            if module_id not in self._modules:
                self._register(module_id, tool)

    def _register(self, module_id: str, tool: types.Tool) -> None:
        try:
            module = UpstreamTool(self, self.name, tool, timeout=self.spec.timeout)
            self.registry.register(module_id, module)
        except (ValueError, InvalidInputError) as exc:
            logger.warning("Upstream %r: tool %r not mounted as %s: %s", self.name, tool.name, module_id, exc)
            return
        self._modules[module_id] = module

    def _unregister(self, module_id: str) -> None:
        self._modules.pop(module_id, None)
        self.registry.unregister(module_id)

    # -- calls -----------------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], context: Context, *, repeatable: bool = False
    ) -> types.CallToolResult:
        """Call ``tool`` for the caller behind ``context`` (apcore's ``Context``).

        ``repeatable`` (read-only or idempotent): may be sent again if the connection is lost.
        An ``auth`` entry's credential failures (no caller token, the exchange refused or not
        answered) are a tool error for this caller alone, naming the server and the reason.
        """
        try:
            private, lease = await self._lease_for(context)
        except UpstreamCredentialsError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc.message))], is_error=True)
        asker = CallAsker(context, prefix=f"{self.name}/")
        if private is not None:
            private.busy += 1
        try:
            result = await lease.call_tool(
                tool, arguments, progress=_Progress(context), asker=asker, repeatable=repeatable
            )
        finally:
            if private is not None:
                private.busy -= 1
                private.used = anyio.current_time()
        asker.raise_deferred()
        return result

    async def _lease_for(self, context: Context) -> tuple[_Private | None, Lease]:
        spec, principal = self.spec, principal_of(context, self.spec.sharing)
        if principal is None:
            if self._lease is None:
                raise RuntimeError(f"upstream source {self.name!r} is not open")
            return None, self._lease
        if self.exchanger is not None:
            spec, principal = await self._as_caller(context, principal)
        found = self._private.get(principal)
        if found is None:
            # No lock held while a server starts: one principal's slow start delays no other.
            lease = await self.pool.acquire(spec, principal)
            found = self._private.get(principal)
            if found is not None:  # another call of the same principal got there first
                await self.pool.release(lease)
            else:
                found = self._private[principal] = _Private(lease, anyio.current_time())
        found.used = anyio.current_time()
        await self._release_idle(keep=principal)
        return found, found.lease

    async def _as_caller(self, context: Context, principal: str) -> tuple[ServerSpec, str]:
        """For an ``auth`` entry: the spec whose connection carries the caller's exchanged token, and the
        handle key's principal part naming that token by its fingerprint (a new token: a new connection).

        Raises:
            UpstreamCredentialsError: no validated bearer on this call, or the exchange failed.
        """
        assert self.exchanger is not None
        caller = getattr(call_context(context), "principal", None)
        credential = getattr(caller, "credential", None)
        token = credential.reveal() if credential is not None else None
        if not token:
            raise UpstreamCredentialsRefused(
                self.name,
                f"upstream {self.name!r} is called as the caller (token exchange), and this call carries no "
                "validated bearer token (authentication is off, or the call did not come over HTTP)",
            )
        exchanged = await self.exchanger.token_for(caller_key(caller, token), token)
        return dataclasses.replace(self.spec, bearer=exchanged.access_token), f"{principal}#{exchanged.fingerprint}"

    async def _release_idle(self, keep: str) -> None:
        """Release private leases unused for ``PRIVATE_IDLE_SECONDS``, then the least recently used idle
        ones past ``max_private``; never one a call is running on, nor ``keep``."""
        cutoff = anyio.current_time() - PRIVATE_IDLE_SECONDS
        excess = len(self._private) - self.max_private
        for principal, entry in sorted(self._private.items(), key=lambda item: item[1].used):
            if principal == keep or entry.busy or self._private.get(principal) is not entry:
                continue
            if entry.used < cutoff or excess > 0:
                del self._private[principal]
                excess -= 1
                await self.pool.release(entry.lease)

    @property
    def private_count(self) -> int:
        """How many per-caller leases this server holds now."""
        return len(self._private)


def _exchanger(spec: ServerSpec) -> TokenExchanger | None:
    if spec.token_exchange is None or spec.url is None:
        return None
    # Half the call's time at most, so a slow authorization server is reported as such, not as a timeout.
    timeout = min(spec.timeout / 2, MAX_EXCHANGE_SECONDS)
    return TokenExchanger(spec.name, spec.token_exchange, audience=spec.url, timeout=timeout)
