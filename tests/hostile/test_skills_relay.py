"""A hostile upstream's skills: what does not check out is not relayed, and says so once.

One real stdio upstream lists a good skill beside skills that lie about a file's digest or size,
one with a file past the bound, and names that try to leave the server's namespace or the
skill's folder. Only the good skill is relayed, under ``<server>/<name>``; each of the others
gets exactly one WARNING naming it and why, and the server's tools are mounted as usual.

Served, a relayed skill follows its tools: a caller who may not see a tool the skill describes
is not shown the skill (Python SDK client over Streamable HTTP, both eras).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from apcore import Registry
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.tools.skills.model import Skill
from apcore_mcp.upstream import skills as relay

from tests._support.auth import api_key_entry, bearer
from tests._support.log_capture import every_record
from tests._support.sessions import running_http
from tests._support.skills import skills_request
from tests._support.skills_upstream import skill, skill_md, skills_entry, write_spec
from tests._support.upstreams import mounted

pytestmark = pytest.mark.asyncio(loop_scope="module")

SMALL_BOUND = 2048
"""The per-file bound for this test, so an oversized file is small to send."""
ESCAPES = {
    "dotdot": skill("../x"),
    "dotdot_inside": skill("pdf/../../x"),
    "slash_in_name": skill("x", frontmatter={"name": "other/x", "description": "escape"}),
    "name_other": skill("y", frontmatter={"name": "other", "description": "names another skill"}),
    "file_outside": skill("notes", files={"../../etc/passwd": "root:x:0:0"}),
}


@dataclass
class Relayed:
    skills: tuple[Skill, ...]
    warnings: list[str]
    modules: list[str]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def relayed(tmp_path_factory: pytest.TempPathFactory) -> Relayed:
    tmp = tmp_path_factory.mktemp("skills")
    huge = "x" * (SMALL_BOUND + 1)
    offered: list[dict[str, Any]] = [
        skill("good", "A skill that checks out"),
        skill("digest", listed={"SKILL.md": {"digest": "sha256:" + "0" * 64}}),
        skill("size", listed={"SKILL.md": {"size": 3}}),
        skill("tampered", files={"ref.md": "the real text"}, listed={"ref.md": {"digest": "sha256:" + "1" * 64}}),
        skill("huge", files={"big.txt": huge}),
        skill("hidden-huge", files={"big.txt": huge}, listed={"big.txt": {"size": 10}}),
        skill("frontmatter", frontmatter={"name": "frontmatter", "description": "not what the file says"}),
        *ESCAPES.values(),
    ]
    spec = write_spec(tmp / "spec.json", [*offered, skill("past-the-bound")])
    # Mounted and unmounted here: what was relayed is immutable, and the pool's task group stays in one task.
    with pytest.MonkeyPatch.context() as patch, every_record() as records:
        patch.setattr(relay, "MAX_FILE_BYTES", SMALL_BOUND)
        patch.setattr(relay, "MAX_SKILLS", len(offered))
        async with mounted({"mcpServers": {"evil": skills_entry(spec)}}, skills=relay.SkillShelf()) as mount:
            assert mount.runtime.skills is not None
            skills, modules = mount.runtime.skills.skills(), list(mount.runtime.sources["evil"].module_ids)
    warnings = [r.getMessage() for r in records.records if r.levelno == logging.WARNING]
    return Relayed(skills=skills, warnings=warnings, modules=modules)


def _warned(relayed: Relayed, uri: str) -> list[str]:
    return [w for w in relayed.warnings if f"skill {uri!r} not served" in w]


async def test_only_the_skill_that_checks_out_is_relayed(relayed: Relayed) -> None:
    assert [s.name for s in relayed.skills] == ["evil/good"]
    assert relayed.skills[0].skill_md == skill_md("good", "A skill that checks out")
    assert relayed.modules == ["evil.announce", "evil.search"]  # the server's tools are mounted as usual


async def test_entries_past_the_bound_are_not_looked_at_and_warned_once(relayed: Relayed) -> None:
    assert not _warned(relayed, "skill://past-the-bound/SKILL.md")
    assert "evil/past-the-bound" not in [s.name for s in relayed.skills]
    assert len([w for w in relayed.warnings if "the rest are not relayed" in w]) == 1


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("digest", "does not match its listed SHA-256 digest"),
        ("size", "not the 3 listed"),
        ("tampered", "ref.md does not match its listed SHA-256 digest"),
        ("huge", f"past the {SMALL_BOUND} a relayed file may have"),
        ("hidden-huge", "not the 10 listed"),
        ("frontmatter", "is not the one its entry lists"),
    ],
)
async def test_a_lying_or_oversized_skill_is_not_served_and_warned_once(relayed: Relayed, path: str, why: str) -> None:
    warned = _warned(relayed, f"skill://{path}/SKILL.md")
    assert len(warned) == 1, relayed.warnings
    assert why in warned[0]


@pytest.mark.parametrize("case", sorted(ESCAPES))
async def test_a_name_leaving_the_namespace_is_not_served(relayed: Relayed, case: str) -> None:
    uri = f"skill://{ESCAPES[case]['path']}/SKILL.md"
    assert len(_warned(relayed, uri)) == 1, relayed.warnings
    assert all(s.name.startswith("evil/") and s.name.count("/") == 1 for s in relayed.skills)
    assert all(".." not in path for s in relayed.skills for path in s.files)


async def test_an_entry_is_checked_before_any_file_is_read() -> None:
    """The declared size is judged from the listing alone: an oversized file is never asked for."""
    entry = {
        "uri": "skill://big/SKILL.md",
        "frontmatter": {"name": "big", "description": "d"},
        "resources": [{"uri": "skill://big/SKILL.md", "digest": "sha256:" + "a" * 64, "size": 10**9}],
    }
    with pytest.raises(relay.SkillRefused, match="past the"):
        relay.parse_entry(entry)


# -- served: a relayed skill is hidden from whoever may not see a tool it describes ---------------

ALICE = "alice-key-" + "a" * 30  # no scopes: docs.purge, so the purging skill, is hidden from her
CAROL = "carol-key-" + "c" * 30  # holds "admin"
PURGING = skill("purging", "Empty the index", "Call `purge` to drop everything.")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    tmp = tmp_path_factory.mktemp("served")
    spec = write_spec(
        tmp / "spec.json", [skill("searching", "Find things", "Call `search`."), PURGING], ("search", "purge")
    )
    (tmp / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": skills_entry(spec)}}))
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="admin")),
        auth_tool_scopes=("docs.purge=admin",),
        auth_filter_tools=True,
        mcp_config=str(tmp / "mcp.json"),
        skills=True,
    )
    async with running_http(Bridge.build(Registry(), settings)) as base:
        yield f"{base}/mcp"


async def listed_uris(url: str, key: str, mode: str) -> tuple[list[str], Client]:
    async with create_mcp_http_client(headers=bearer(key)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
            listed = await skills_request(client.session, "skills/list")
            return [entry["uri"] for entry in listed["skills"]], client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_relayed_skill_describing_a_hidden_tool_is_hidden(url: str, mode: str) -> None:
    uris, _ = await listed_uris(url, ALICE, mode)
    assert "skill://docs/searching/SKILL.md" in uris
    assert "skill://docs/purging/SKILL.md" not in uris
    uris, _ = await listed_uris(url, CAROL, mode)
    assert "skill://docs/purging/SKILL.md" in uris  # there for whoever sees its tools


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_relayed_skill_is_served_byte_for_byte(url: str, mode: str) -> None:
    async with create_mcp_http_client(headers=bearer(CAROL)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client:
            got = await skills_request(client.session, "skills/get", uri="skill://docs/purging/SKILL.md")
            read = await client.read_resource("skill://docs/purging/SKILL.md")
    assert got["skill"]["frontmatter"] == {"name": "purging", "description": "Empty the index"}
    assert getattr(read.contents[0], "text", None) == PURGING["files"]["SKILL.md"]
