"""Why is a tool hidden? Every registered module that is not served to someone, and why.

For the operator only (``GET /admin/tools``, ``http/admin.py``): names and reasons are what the
hidden-tool rule (``calls/authorization.py``) keeps from callers. ``/ready``, open to anyone,
gets the count alone. Each reason is a dict with a ``kind``:

- ``discovery``: the module is registered but cannot be served (``tools/problems.py``), with the
  ``problem`` and, when known, its ``file``;
- ``filter``: the ``prefix`` or ``tags`` setting, or the endpoint's toolset ``selection``, leaves
  it out (``filter`` names which);
- ``scope``: with auth on, callers whose token lacks ``scopes`` neither see nor call it;
- ``acl``: apcore's ACL, judged without arguments as lists judge it, refuses it to the
  ``refused`` callers: among one without an identity (auth off, stdio), the anonymous caller
  and a user without roles (a rule depending on arguments decides only at call time);
- ``upstream``: a server of the upstream config failed to mount or broke; its tools are not
  registered at all, so the entry names the ``upstream`` and its ``error`` instead of a module;
- ``drift``: an upstream tool held from its pin (``upstream/pins``) and not registered: the entry
  names the ``upstream`` and its ``tool``, the reason its ``state`` (``changed``, ``new``,
  ``unpinned``, ``unpinnable``) with the ``pinned`` and ``current`` hashes.
"""

from __future__ import annotations

from typing import Any

from apcore import Context, Identity

from apcore_mcp.bridge.core import Bridge
from apcore_mcp.bridge.upstreams import readiness
from apcore_mcp.calls.authorization import acl_allows
from apcore_mcp.calls.principal import tool_scopes
from apcore_mcp.tools.problems import ModuleProblem
from apcore_mcp.upstream.toolsets import UpstreamRuntime

Entry = dict[str, Any]

JUDGED: tuple[tuple[dict[str, Any], Identity | None], ...] = (
    ({"caller": "none"}, None),
    ({"caller": "anonymous"}, Identity(id="anonymous", type="anonymous", roles=())),
    ({"caller": "user", "roles": []}, Identity(id="user", type="user", roles=())),
)
"""The callers the ACL is judged for: no identity, the anonymous caller, a user without roles."""


def hidden_tools(bridge: Bridge, upstreams: UpstreamRuntime | None) -> list[Entry]:
    """Each module not served to someone (``{"module", "reasons"}``), then each failed upstream
    (``{"upstream", "reasons"}``), sorted by name."""
    catalog = bridge.full_catalog
    problems = {problem.module_id: problem for problem in catalog.problems() if problem.module_id is not None}
    judges = [(label, Context.create(identity=identity)) for label, identity in JUDGED]
    entries: list[Entry] = []
    for module_id in bridge.registry.list():
        reasons = _reasons(bridge, module_id, problems.get(module_id), judges)
        if reasons:
            entries.append({"module": module_id, "reasons": reasons})
    return entries + _failed_upstreams(upstreams) + _drifted(upstreams)


def _reasons(
    bridge: Bridge, module_id: str, problem: ModuleProblem | None, judges: list[tuple[dict[str, Any], Context]]
) -> list[dict[str, Any]]:
    excluded = bridge.full_catalog.excluded_by(module_id)
    if excluded is not None:
        return [{"kind": "filter", "filter": excluded}]
    if problem is not None:
        return [{"kind": "discovery", "problem": problem.reason, **({"file": problem.file} if problem.file else {})}]
    if bridge.full_catalog.module(module_id) is None:
        return []  # registered since the last load, not followed (no dynamic): not a hidden tool
    reasons: list[dict[str, Any]] = []
    signin = bridge.authorization.signin
    if signin is not None and signin.mixed and not signin.public(module_id):
        reasons.append({"kind": "not_public"})  # callers without credentials are not served it
    scopes = tool_scopes(bridge.authorization.tool_rules, module_id)
    if scopes and bridge.settings.auth != "none":
        reasons.append({"kind": "scope", "scopes": sorted(scopes)})
    acl = bridge.authorization.acl
    if acl is not None:
        refused = [label for label, context in judges if not acl_allows(acl, module_id, context)]
        if refused:
            reasons.append({"kind": "acl", "refused": refused})
    return reasons


def _failed_upstreams(upstreams: UpstreamRuntime | None) -> list[Entry]:
    status = readiness(upstreams)
    failed: dict[str, str] = status["failed"] if status is not None else {}
    return [
        {"upstream": name, "reasons": [{"kind": "upstream", "upstream": name, "error": error}]}
        for name, error in sorted(failed.items())
    ]


def _drifted(upstreams: UpstreamRuntime | None) -> list[Entry]:
    held = upstreams.pins.held() if upstreams is not None and upstreams.pins is not None else []
    return [
        {
            "upstream": entry.server,
            entry.kind: entry.tool,  # "tool", or "skill" for a held relayed skill
            "reasons": [{"kind": "drift", "state": entry.state, "pinned": entry.pinned, "current": entry.current}],
        }
        for entry in held
    ]


class HiddenCount:
    """How many entries ``hidden_tools`` has, for ``/ready``: recomputed only when the registry,
    the catalog or the failed upstreams changed, since probes ask often."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self._key: tuple[object, ...] | None = None
        self._count = 0

    def __call__(self, upstreams: UpstreamRuntime | None) -> int:
        status = readiness(upstreams)
        failed = tuple(sorted(status["failed"])) if status is not None else ()
        drifted = status["drifted_tools"] if status is not None else 0
        key = (self._bridge.full_catalog.generation, self._bridge.registry.count, failed, drifted)
        if key != self._key:
            self._count = len(hidden_tools(self._bridge, upstreams))
            self._key = key
        return self._count
