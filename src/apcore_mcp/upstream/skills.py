"""Skills an upstream server offers (SEP-2640, ``io.modelcontextprotocol/skills``), relayed unchanged.

When a mounted server advertises the extension, ``relay_skills`` lists its skills
(``skills/list``), reads every file each entry lists (``resources/read`` of its ``skill://``
URI) and checks each file's bytes against the SHA-256 digest and size the entry gave. A skill
passing every check is put on the ``SkillShelf`` under ``<server>/<skill>``: its files byte for
byte as the upstream sent them, so its frontmatter (and its ``name``, the last segment) is
unchanged. A skill failing any check is not served at all, and one WARNING says which and why;
the server's other skills and its tools are served as before.

Everything read is bounded before it is read: skills per server, files per skill, bytes per
file (the size the entry declares is checked before the file is asked for, and the bytes that
arrive are checked again), bytes per skill and per server, pages of ``skills/list``.

Names are checked against the Agent Skills rule (1-64 of ``[a-z0-9-]``, no leading, trailing or
double hyphen) and every path segment against a plain file-name rule, so nothing upstream can
put a skill outside its server's namespace (``../x``, ``other/x``) or a file outside its skill.

A skill describes tools: those its frontmatter's ``allowed-tools`` names and those of the
server whose names its ``SKILL.md`` mentions. They are recorded as our module ids
(``<server>.<tool>``) so that the skills edge shows the skill only to a caller who may see
them; a tool the upstream does not list, or one held by the pins, names no module, so a skill
describing it is shown to no one.

Skills are fetched at mount and again whenever the server's tools are listed again (its
``list_changed``, a restart); a fetch that fails keeps the skills relayed before.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import mcp.types as types
import yaml
from pydantic import ConfigDict

from apcore_mcp.tools.skills.model import SKILL_FILE, Skill, make_skill, upstream_origin
from apcore_mcp.upstream.errors import UpstreamError
from apcore_mcp.upstream.names import module_ids

logger = logging.getLogger(__name__)

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
MAX_SKILLS = 64
"""Entries of one server's list looked at, at most; past it the rest are not (one WARNING for them all)."""
MAX_FILES = 64
"""Files of one skill at most (the SEP lets a server list up to 512)."""
MAX_FILE_BYTES = 1024 * 1024
MAX_SKILL_BYTES = 4 * 1024 * 1024
MAX_SERVER_BYTES = 16 * 1024 * 1024
MAX_PAGES = 16
NAME = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
"""The Agent Skills naming rule for a skill's name (the last segment of its path)."""
SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
"""One segment of a skill's path or of a file's path inside it: no ``..``, no ``/``, no escapes."""
DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")
_FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---\r?\n", re.DOTALL)


class SkillRefused(ValueError):
    """One upstream skill is not relayed; the message says why (it is logged once, as a WARNING)."""


class Requester(Protocol):
    """The live connection to the upstream (``upstream.connection.Connection``)."""

    @property
    def extensions(self) -> Mapping[str, Any]: ...

    async def send(self, request: types.Request[Any, Any], result_type: type[types.Result]) -> types.Result: ...


class _Request(types.Request[dict[str, Any], str]):
    """``skills/list`` and the rest: methods the SDK has no type for, their params plain JSON."""


class _Json(types.Result):
    model_config = ConfigDict(extra="allow")


async def _request(requester: Requester, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result = await requester.send(_Request(method=method, params=params), _Json)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


@dataclass(frozen=True)
class ListedFile:
    path: str
    uri: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Listed:
    """One ``skills/list`` entry, checked: its name, its description and the files it lists."""

    uri: str
    name: str
    frontmatter: dict[str, Any]
    files: tuple[ListedFile, ...]


class SkillShelf:
    """The relayed skills of every mounted server, by server; ``generation`` grows and listeners
    hear of it at each change (the skills catalog rebuilds its set when the generation moved)."""

    def __init__(self) -> None:
        self._by_server: dict[str, tuple[Skill, ...]] = {}
        self._listeners: list[Callable[[], None]] = []
        self.generation = 0

    def put(self, server: str, skills: Sequence[Skill]) -> None:
        if self._by_server.get(server, ()) == tuple(skills):
            return
        self._by_server[server] = tuple(skills)
        self._changed()

    def drop(self, server: str) -> None:
        if self._by_server.pop(server, None) is not None:
            self._changed()

    def skills(self) -> tuple[Skill, ...]:
        """Every relayed skill, in name order."""
        return tuple(sorted((s for group in self._by_server.values() for s in group), key=lambda s: s.name))

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self) -> None:
        self.generation += 1
        for listener in list(self._listeners):
            listener()


def advertises_skills(requester: Requester) -> bool:
    return SKILLS_EXTENSION in (requester.extensions or {})


async def relay_skills(
    shelf: SkillShelf,
    requester: Requester,
    server: str,
    segment: str,
    tools: Iterable[types.Tool],
    admit: Callable[[list[Skill]], list[Skill]] | None = None,
) -> None:
    """Fetch ``server``'s skills and put those that pass every check on ``shelf`` (see the module doc);
    with ``admit`` (the pins), only the skills it returns.

    A failure to list keeps what the shelf held for ``server`` (one WARNING).
    """
    if not advertises_skills(requester):
        shelf.drop(server)
        return
    try:
        skills = await fetch_skills(requester, server, segment, list(tools))
    except (UpstreamError, SkillRefused) as exc:
        logger.warning("Upstream %r: skills not relayed, the ones relayed before stay (%s)", server, _why(exc))
        return
    if admit is not None:
        skills = admit(skills)
    shelf.put(server, skills)
    logger.info("Upstream %r: %d skill(s) relayed", server, len(skills))


async def fetch_skills(requester: Requester, server: str, segment: str, tools: list[types.Tool]) -> list[Skill]:
    """The skills of ``server`` that pass every check, named ``<segment>/<name>``.

    Raises:
        UpstreamError: ``skills/list`` failed.
        SkillRefused: ``skills/list`` answered with something that is not a list of skills.
    """
    entries = await _list_entries(requester, server)
    if len(entries) > MAX_SKILLS:  # so a list of junk cannot flood the log with one WARNING per entry
        logger.warning("Upstream %r lists more than %d skills: the rest are not relayed", server, MAX_SKILLS)
        entries = entries[:MAX_SKILLS]
    ids = module_ids(segment, [tool.name for tool in tools])
    skills: list[Skill] = []
    seen: set[str] = set()
    budget = MAX_SERVER_BYTES
    for entry in entries:
        try:
            listed = parse_entry(entry)
            if listed.name in seen:
                raise SkillRefused(f"a second skill named {listed.name!r}")
            size = sum(f.size for f in listed.files)
            if size > budget:
                raise SkillRefused(f"the server's skills pass {MAX_SERVER_BYTES} bytes together")
            files = {f.path: await _read_file(requester, f) for f in listed.files}
            _check_frontmatter(listed, files[SKILL_FILE])
            skill = _skill(listed, files, server, segment, ids)
        except (SkillRefused, UpstreamError, ValueError) as exc:
            logger.warning("Upstream %r: skill %s not served: %s", server, _label(entry), _why(exc))
            continue
        seen.add(listed.name)
        budget -= size
        skills.append(skill)
    return skills


async def _list_entries(requester: Requester, server: str) -> list[Any]:
    entries: list[Any] = []
    cursor: str | None = None
    for _page in range(MAX_PAGES):
        result = await _request(requester, "skills/list", {"cursor": cursor} if cursor else {})
        page = result.get("skills")
        if not isinstance(page, list):
            raise SkillRefused("skills/list answered without a list of skills")
        entries.extend(page)
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor or len(entries) > MAX_SKILLS:
            break
    return entries


def parse_entry(entry: Any) -> Listed:
    """One ``skills/list`` entry checked: a ``skill://<path>/SKILL.md`` URI whose last segment is the
    frontmatter's ``name``, and a static list of files inside the skill, each with a digest and a size.

    Raises:
        SkillRefused: any of it is missing, malformed, out of bounds or outside the skill.
    """
    if not isinstance(entry, dict):
        raise SkillRefused("the entry is not an object")
    uri, frontmatter, resources = entry.get("uri"), entry.get("frontmatter"), entry.get("resources")
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or not uri.endswith("/" + SKILL_FILE):
        raise SkillRefused(f"its uri is not skill://<path>/{SKILL_FILE}")
    path = uri[len(SCHEME) : -len(SKILL_FILE) - 1].split("/")
    if not all(SEGMENT.match(segment) for segment in path):
        raise SkillRefused("its path has a segment that is not a plain name")
    name = path[-1]
    if not NAME.match(name):
        raise SkillRefused("its name breaks the naming rule (1-64 of a-z, 0-9 and single hyphens)")
    if not isinstance(frontmatter, dict) or frontmatter.get("name") != name:
        raise SkillRefused("its frontmatter's name is not the last segment of its uri")
    if not isinstance(frontmatter.get("description"), str):
        raise SkillRefused("its frontmatter has no description")
    if not isinstance(resources, list):
        raise SkillRefused("its files are not listed (a dynamic skill cannot be checked before it is served)")
    if len(resources) > MAX_FILES:
        raise SkillRefused(f"it lists more than {MAX_FILES} files")
    files = tuple(_listed_file(uri[: -len(SKILL_FILE)], item) for item in resources)
    if SKILL_FILE not in {f.path for f in files}:
        raise SkillRefused(f"its files do not include {SKILL_FILE}")
    if len({f.path for f in files}) != len(files):
        raise SkillRefused("it lists a file twice")
    if sum(f.size for f in files) > MAX_SKILL_BYTES:
        raise SkillRefused(f"its files pass {MAX_SKILL_BYTES} bytes together")
    return Listed(uri=uri, name=name, frontmatter=frontmatter, files=files)


def _listed_file(root: str, item: Any) -> ListedFile:
    if not isinstance(item, dict):
        raise SkillRefused("a listed file is not an object")
    uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    if not isinstance(uri, str) or not uri.startswith(root):
        raise SkillRefused("a listed file is outside the skill")
    relative = uri[len(root) :]
    if not all(SEGMENT.match(segment) for segment in relative.split("/")):
        raise SkillRefused("a listed file's path has a segment that is not a plain name")
    matched = DIGEST.match(digest) if isinstance(digest, str) else None
    if matched is None:
        raise SkillRefused(f"file {relative} has no sha256:<hex> digest")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise SkillRefused(f"file {relative} has no size")
    if size > MAX_FILE_BYTES:
        raise SkillRefused(f"file {relative} is {size} bytes, past the {MAX_FILE_BYTES} a relayed file may have")
    return ListedFile(path=relative, uri=uri, sha256=matched.group(1), size=size)


async def _read_file(requester: Requester, listed: ListedFile) -> bytes:
    result = await _request(requester, "resources/read", {"uri": listed.uri})
    contents = result.get("contents")
    found = (
        [c for c in contents if isinstance(c, dict) and c.get("uri") == listed.uri]
        if isinstance(contents, list)
        else []
    )
    if len(found) != 1:
        raise SkillRefused(f"file {listed.path} was not read back as one content")
    data = _content_bytes(found[0], listed.path)
    if len(data) != listed.size:
        raise SkillRefused(f"file {listed.path} is {len(data)} bytes, not the {listed.size} listed")
    if hashlib.sha256(data).hexdigest() != listed.sha256:
        raise SkillRefused(f"file {listed.path} does not match its listed SHA-256 digest")
    return data


def _content_bytes(content: dict[str, Any], path: str) -> bytes:
    if isinstance(content.get("text"), str):
        return str(content["text"]).encode("utf-8")
    if isinstance(content.get("blob"), str):
        try:
            return base64.b64decode(content["blob"], validate=True)
        except (binascii.Error, ValueError):
            raise SkillRefused(f"file {path} is not valid base64") from None
    raise SkillRefused(f"file {path} came back with neither text nor blob")


def _check_frontmatter(listed: Listed, skill_md: bytes) -> None:
    """The entry's frontmatter must be the file's (the SEP: identical in content)."""
    try:
        matched = _FRONTMATTER.match(skill_md.decode("utf-8"))
        parsed = yaml.safe_load(matched.group(1)) if matched else None
    except (UnicodeDecodeError, yaml.YAMLError):
        parsed = None
    if parsed != listed.frontmatter:
        raise SkillRefused(f"the frontmatter of {SKILL_FILE} is not the one its entry lists")


def _skill(listed: Listed, files: dict[str, bytes], server: str, segment: str, ids: dict[str, str]) -> Skill:
    text = files[SKILL_FILE].decode("utf-8")
    described = set(_allowed_tools(listed.frontmatter)) | {name for name in ids if _mentions(text, name)}
    tools = [ids.get(name) or module_ids(segment, [name])[name] for name in described]
    return make_skill(
        f"{segment}/{listed.name}",
        str(listed.frontmatter["description"]),
        files[SKILL_FILE],
        other_files={path: data for path, data in files.items() if path != SKILL_FILE},
        tools=tools,
        origin=upstream_origin(server),
    )


def _allowed_tools(frontmatter: dict[str, Any]) -> list[str]:
    value = frontmatter.get("allowed-tools")
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in value]
    return []


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def _label(entry: Any) -> str:
    uri = entry.get("uri") if isinstance(entry, dict) else None
    return repr(uri[:200]) if isinstance(uri, str) else "(no uri)"


def _why(exc: Exception) -> str:
    return exc.public if isinstance(exc, UpstreamError) else str(exc)
