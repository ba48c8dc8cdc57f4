"""Who may run which module: the one check on every route to a module, and the rule lists follow.

Every route that runs a module ends in ``CallRouter`` (``calls/router.py``): a ``tools/call`` in
either protocol era over Streamable HTTP, SSE or stdio, the explorer's MCP door,
``invoke_tool`` in search mode (for its target), a toolset endpoint's call, a resource read.
Before the Executor runs the module, the router asks ``Authorization`` about that module,
with the caller's ``CallContext`` built at the edge:

1. tool scopes: the caller's token holds every scope the rules give the module's name
   (a caller without a token, on stdio or with auth off, has no scopes to check);
2. admission: the rate limit and the caller's share of the concurrency cap (``CallLimits``),
   counted once per module run.

The Executor then applies apcore's ACL (with the caller's identity) and approval to the same
module. The HTTP auth middleware refuses early a request whose URL or ``Mcp-Name`` header
names a tool the token lacks scopes for: a cheap pre-check; this is the rule.

Lists (a filtered ``tools/list``, the explorer's list, ``search_tools``, ``describe_tool``)
show a tool by ``visible``: the same scope rule, plus the ACL judged without arguments (a rule
that depends on arguments decides at call time).

With ``filter_tools`` (the ``auth_filter_tools`` setting) a tool ``visible`` does not show the
caller is *hidden* from it (``hides``), and hidden means absent: the check answers it
``module_not_found``, the words of a tool that does not exist, never the scope it lacks. The
routes that answer an absent tool before the router (the explorer's MCP door's
confirmation gate, the tasks layer) ask ``hides`` too, and answer as for an absent one; the HTTP
pre-check leaves tool scopes to the router then (``http/auth.py``). Without ``filter_tools``
every tool is listed, so a refusal names the scopes missing: the useful answer then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from apcore import ACL, Context, Identity

from apcore_mcp._apcore import executor_acl as executor_acl  # apcore has no getter: see there
from apcore_mcp.calls.context import CallContext
from apcore_mcp.calls.errors import SafeError, module_not_found
from apcore_mcp.calls.limits import CallLimits, Refusal
from apcore_mcp.calls.principal import ScopeRules, tool_scopes
from apcore_mcp.calls.signin import SignIn, is_anonymous

logger = logging.getLogger(__name__)


def acl_allows(acl: ACL, module_id: str, context: Context) -> bool:
    """Whether ``acl`` lets an outside caller (apcore's ``@external``) reach the module.

    Allowed with an approval requirement counts as allowed: the call is put to a human then,
    so the tool is the caller's to see. (``ACL.check`` answers ``False`` for it.)
    """
    return bool(acl.check_access(None, module_id, context).access == "allow")


class Authorization:
    """The tool scope rules, the ACL lists are judged by, and the limits every module run is admitted by."""

    def __init__(
        self,
        *,
        tool_rules: ScopeRules = (),
        acl: ACL | None = None,
        limits: CallLimits | None = None,
        filter_tools: bool = False,
        signin: SignIn | None = None,
    ) -> None:
        self.tool_rules = tool_rules
        self.acl = acl
        self.limits = limits if limits is not None else CallLimits()
        self.filter_tools = filter_tools
        self.signin = signin

    def public(self, name: str) -> bool:
        """Whether a caller without credentials may use ``name`` (``calls/signin.py``)."""
        return self.signin is not None and self.signin.public(name)

    def denial(self, name: str, scopes: frozenset[str] | None, origin: str = "mcp") -> SafeError | None:
        """``access_denied`` when ``scopes`` lack one of ``name``'s; ``None`` scopes (no token) are not checked."""
        if scopes is None:
            return None
        missing = tool_scopes(self.tool_rules, name) - scopes
        if not missing:
            return None
        meta = self.signin.challenge_meta(origin, name, insufficient=True) if self.signin is not None else None
        return SafeError("access_denied", f"Access denied: needs scope {' '.join(sorted(missing))}", meta)

    def sign_in(self, name: str, origin: str) -> SafeError:
        """``unauthenticated``: a caller without credentials called a protected tool it may know of."""
        meta = self.signin.challenge_meta(origin, name, insufficient=False) if self.signin is not None else None
        return SafeError("unauthenticated", f"Sign in to use {name}: it is not public", meta)

    def check(self, name: str, call: CallContext) -> SafeError | None:
        """The scope check of running module ``name`` for the caller of ``call`` (logged when refused).

        A tool hidden from the caller is answered as an absent one (see the module docstring); a
        caller without credentials may run public tools only, and is asked to sign in for another.
        """
        denied: SafeError | None
        if self.hides(name, call):
            denied = module_not_found(name)
        elif is_anonymous(call.identity):
            denied = None if self.public(name) else self.sign_in(name, call.origin)
        else:
            denied = self.denial(name, call.scopes, call.origin)
        if denied is not None:
            who = call.principal.identity.id if call.principal is not None else call.caller
            logger.info("Refused %s to %r (%s): %s", name, who, call.origin, denied.message)
        return denied

    async def admit(self, call: CallContext) -> Refusal | None:
        """Admit one module run for the caller (then ``release`` it), or say why not."""
        if not self.limits.active:
            return None
        refusal = await self.limits.acquire(call.caller)
        if refusal is not None:
            logger.info("Call refused (%s) for %s", refusal.reason, call.origin)
        return refusal

    def release(self, call: CallContext) -> None:
        if self.limits.active:
            self.limits.release(call.caller)

    def visible(self, scopes: frozenset[str] | None, identity: Identity | None) -> Callable[[str], bool]:
        """Which tools a caller holding ``scopes`` (``None``: no token) as ``identity`` may see: those it may call.

        The anonymous caller may call the public tools only (``calls/signin.py``).
        """
        context = Context.create(identity=identity)  # one per list, not per tool
        acl = self.acl
        anonymous = is_anonymous(identity)

        def shown(name: str) -> bool:
            if not self.public(name) if anonymous else self.denial(name, scopes) is not None:
                return False
            return acl is None or acl_allows(acl, name, context)

        return shown

    def visible_to(self, call: CallContext) -> Callable[[str], bool]:
        """``visible`` for the caller of ``call``."""
        return self.visible(call.scopes, call.identity)

    def listed(self, scopes: frozenset[str] | None, identity: Identity | None) -> Callable[[str], bool]:
        """Which tools exist for a caller: with ``filter_tools``, and always for the anonymous caller,
        those ``visible`` shows it; else all."""
        if not self.filter_tools and not is_anonymous(identity):
            return _every_tool
        return self.visible(scopes, identity)

    def hides(self, name: str, call: CallContext) -> bool:
        """Whether ``filter_tools`` hides ``name`` from the caller of ``call``: then it is answered as absent."""
        return self.filter_tools and not self.visible_to(call)(name)


def _every_tool(_name: str) -> bool:
    return True
