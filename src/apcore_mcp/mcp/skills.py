"""The MCP Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) on the wire.

``skills/list`` and ``skills/get`` answer skill entries: the ``skill://<name>/SKILL.md`` URI,
the frontmatter as the file has it, and every file of the skill with its ``sha256:`` digest and
size. The files themselves are ``skill://`` resources: ``resources/list`` names each skill's
``SKILL.md``, ``resources/read`` reads any of its files. On 2026-07-28 both methods carry
``ttlMs``/``cacheScope`` as lists do. ``resources/directory/read`` (optional) is not served.

Visibility follows the tools: a caller is shown a skill only when it may see every tool the
skill describes (``ToolAccess.listed``, the rule ``tools/list`` uses); any other skill is
hidden whole (not cut down) on every route, and asked for by URI it is answered as absent.
"""

from __future__ import annotations

import base64
import json
import logging
import mimetypes
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import mcp.types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import SERVER_INFO_META_KEY
from pydantic import Field

from apcore_mcp.calls.principal import request_identity
from apcore_mcp.calls.signin import is_anonymous
from apcore_mcp.mcp.access import ToolAccess
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.mcp.resources import not_found
from apcore_mcp.settings import Settings
from apcore_mcp.tasks.records import task_support
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.problems import ModuleProblemsError
from apcore_mcp.tools.skills.catalog import SkillCatalog
from apcore_mcp.tools.skills.directory import load_skills_dir
from apcore_mcp.tools.skills.generate import GroupBy
from apcore_mcp.tools.skills.model import SKILL_FILE, Skill, SkillFile

logger = logging.getLogger(__name__)

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SKILL_SCHEME = "skill://"
SEARCH_NOTE = (
    "This server is in search mode: these tools are not listed, call each through `invoke_tool` "
    "with its `name` and `arguments` (`describe_tool` gives its full schema)."
)
MARKDOWN = "text/markdown"


class ListSkillsParams(types.RequestParams):
    cursor: str | None = Field(default=None, max_length=1024)


class GetSkillParams(types.RequestParams):
    uri: str = Field(min_length=1, max_length=2048)


def skill_uri(skill: Skill, path: str = SKILL_FILE) -> str:
    return f"{SKILL_SCHEME}{skill.name}/{path}"


def skill_entry(skill: Skill) -> dict[str, Any]:
    """The wire entry of ``skill``: its URI, frontmatter and complete file manifest."""
    return {
        "uri": skill_uri(skill),
        # YAML may hold dates: the JSON form of the very values the file has.
        "frontmatter": json.loads(json.dumps(dict(skill.frontmatter), default=str)),
        "resources": [
            {"uri": skill_uri(skill, path), "digest": f"sha256:{f.sha256}", "size": f.size}
            for path, f in skill.files.items()
        ],
    }


def file_contents(uri: str, f: SkillFile) -> dict[str, Any]:
    """One ``resources/read`` content item: text when the file is UTF-8, else base64."""
    mime = MARKDOWN if f.path.endswith(".md") else mimetypes.guess_type(f.path)[0] or "application/octet-stream"
    try:
        return {"uri": uri, "mimeType": mime, "text": f.data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(f.data).decode("ascii")}


class SkillEndpoints:
    """``skills/list``, ``skills/get`` and the ``skill://`` resources, filtered per caller.

    ``ttl_ms`` is the freshness ``skills/list`` and ``skills/get`` promise on 2026-07-28.
    """

    def __init__(self, skills: SkillCatalog, access: ToolAccess, *, ttl_ms: int) -> None:
        self.skills = skills
        self.access = access
        self.ttl_ms = ttl_ms
        self._server_info: Callable[[], Any] = lambda: None

    def install(self, server: Any) -> None:
        self._server_info = lambda: server.server_info_stamp
        server.extensions[SKILLS_EXTENSION] = {}
        server.add_request_handler("skills/list", ListSkillsParams, self.list_skills)
        server.add_request_handler("skills/get", GetSkillParams, self.get_skill)
        server.middleware.append(self)

    def _shown(self, ctx: ServerRequestContext[Any, Any]) -> Callable[[Skill], bool]:
        """Whether the caller may see a skill: every tool it describes listed to them."""
        identity = request_identity(ctx.request, self.access.default_identity)
        if not self.access.filter_list and not is_anonymous(identity):
            return lambda _skill: True
        listed = self.access.listed(getattr(ctx.request, "scope", None), identity)
        return lambda skill: all(listed(tool) for tool in skill.tools)

    def _cached(self, ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> dict[str, Any]:
        if is_modern(ctx):
            scope = "private" if self.access.active else "public"  # filtered answers differ per caller
            return {"ttlMs": self.ttl_ms, "cacheScope": scope, **result}
        return result

    async def list_skills(self, ctx: ServerRequestContext[Any, Any], params: ListSkillsParams) -> HandlerResult:
        if params.cursor is not None:  # one page, so no cursor of ours exists
            raise MCPError(types.INVALID_PARAMS, "Invalid cursor: skills/list has a single page")
        shown = self._shown(ctx)
        return self._cached(ctx, {"skills": [skill_entry(s) for s in self.skills.current() if shown(s)]})

    async def get_skill(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> HandlerResult:
        skill = self._find(ctx, params.uri)
        if skill is None or params.uri != skill_uri(skill):
            raise MCPError(types.INVALID_PARAMS, "Unknown skill", data={"uri": params.uri})
        return self._cached(ctx, {"skill": skill_entry(skill)})

    def _find(self, ctx: ServerRequestContext[Any, Any], uri: str) -> Skill | None:
        """The skill a ``skill://<name>/...`` URI is in, if the caller may see it; a relayed upstream
        skill's name has two segments (``<server>/<skill>``), and the longer name is tried first."""
        if not uri.startswith(SKILL_SCHEME):
            return None
        parts, current = uri[len(SKILL_SCHEME) :].split("/"), self.skills.current()
        names = ["/".join(parts[:2])] if len(parts) > 2 else []
        skill = next((found for name in [*names, parts[0]] if (found := current.get(name)) is not None), None)
        return skill if skill is not None and self._shown(ctx)(skill) else None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "resources/read":
            uri = str((ctx.params or {}).get("uri", ""))
            if uri.startswith(SKILL_SCHEME):
                return self._read(ctx, uri)
        result = await call_next(ctx)
        if ctx.method == "resources/list" and isinstance(result, dict) and not result.get("nextCursor"):
            listed = {**result, "resources": [*result.get("resources", []), *self._listed(ctx)]}
            if is_modern(ctx) and self.access.active:
                listed["cacheScope"] = "private"  # the skills listed differ per caller
            return listed
        return result

    def _read(self, ctx: ServerRequestContext[Any, Any], uri: str) -> dict[str, Any]:
        skill = self._find(ctx, uri)
        path = uri[len(skill_uri(skill, "")) :] if skill is not None else ""
        if skill is None or path not in skill.files:
            raise not_found(uri)
        result: dict[str, Any] = {"contents": [file_contents(uri, skill.files[path])]}
        if is_modern(ctx):
            # Answered before the SDK's handler step, so the 2026-07-28 envelope is ours to give.
            meta = {SERVER_INFO_META_KEY: self._server_info()}
            result = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", **result, "_meta": meta}
        return result

    def _listed(self, ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
        shown = self._shown(ctx)
        return [
            {
                "uri": skill_uri(skill),
                "name": skill.name,
                "description": skill.description,
                "mimeType": MARKDOWN,
                "size": skill.files[SKILL_FILE].size,
            }
            for skill in self.skills.current()
            if shown(skill)
        ]


class RelayedSkills(Protocol):
    """The upstream servers' skills (``upstream.skills.SkillShelf``); ``generation`` grows at each change."""

    @property
    def generation(self) -> int: ...

    def skills(self) -> Iterable[Skill]: ...


def skill_catalog(
    catalog: ToolCatalog, settings: Settings, *, relayed: RelayedSkills | None = None
) -> SkillCatalog | None:
    """The skills ``settings`` ask for over ``catalog`` (``None``: skills are off), with ``relayed`` among them.

    A folder of ``skills_dir`` that cannot be served is a WARNING naming its file, as a module
    that cannot be is; with ``strict_modules`` the server does not start.

    Raises:
        ModuleProblemsError: ``strict_modules`` and a skill folder that cannot be served.
    """
    if not settings.skills:
        return None
    written: list[Skill] = []
    if settings.skills_dir is not None:
        written, problems = load_skills_dir(settings.skills_dir)
        if problems and settings.strict_modules:
            raise ModuleProblemsError(problems)
        for problem in problems:
            logger.warning("%s", problem)
    group_by: GroupBy = "tag" if settings.skills_group_by == "tag" else "prefix"
    return SkillCatalog(
        catalog,
        group_by=group_by,
        written=written,
        runs_long=lambda record: task_support(record.annotations) != "forbidden",
        relayed=relayed.skills if relayed is not None else None,
        relayed_generation=(lambda: relayed.generation) if relayed is not None else (lambda: 0),
        note=SEARCH_NOTE if settings.tool_mode == "search" else "",
    )
