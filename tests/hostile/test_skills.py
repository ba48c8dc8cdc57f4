"""Hostile seams of skills: the skills/ directory cannot lead out or grow without bound;
a skill is hidden from whoever may not see one of its tools, on every route."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import pytest_asyncio
from apcore import Registry
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.tools.skills.directory import load_skills_dir

from tests._support.auth import api_key_entry, endpoint_client
from tests._support.modules import Echo
from tests._support.sessions import running_http
from tests._support.skills import AnyResult, skills_request, write_skill


def test_a_symlinked_file_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=hunter2")
    root = tmp_path / "skills"
    folder = write_skill(root, "leaky")
    (folder / "notes.md").symlink_to(secret)
    skills, problems = load_skills_dir(root)
    assert skills == []
    assert problems[0].file == str(folder / "notes.md") and "symlink" in problems[0].reason


def test_a_symlinked_folder_and_skill_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "elsewhere")
    root = tmp_path / "skills"
    folder = write_skill(root, "linker")
    (folder / "refs").symlink_to(outside / "elsewhere")
    (root / "elsewhere").symlink_to(outside / "elsewhere")
    skills, problems = load_skills_dir(root)
    assert skills == []
    assert sorted(Path(p.file or "").relative_to(root).as_posix() for p in problems) == ["elsewhere", "linker/refs"]
    assert all("symlink" in p.reason for p in problems)


def test_a_dot_dot_name_cannot_name_a_skill(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "ok")
    # No folder entry can be ".." and names must be skill names: a frontmatter name cannot redirect.
    (root / "ok" / "SKILL.md").write_text("---\nname: ../ok\ndescription: d\n---\n")
    skills, problems = load_skills_dir(root)
    assert skills == [] and "must equal the folder name" in problems[0].reason


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "big")
    (folder / "huge.bin").write_bytes(b"x" * 2049)
    skills, problems = load_skills_dir(tmp_path, max_file_bytes=2048)
    assert skills == []
    assert problems[0].file == str(folder / "huge.bin") and "over the 2048-byte limit" in problems[0].reason


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "many")
    for i in range(3):
        (folder / f"f{i}.md").write_text(str(i))
    skills, problems = load_skills_dir(tmp_path, max_files=3)
    assert skills == [] and "more than 3 files" in problems[0].reason


# -- visibility: a skill is hidden whole from whoever may not see one of its tools --------------

ALICE = "alice-key-" + "a" * 30  # no scopes: every admin.* tool, so the admin skill, is hidden from her
CAROL = "carol-key-" + "c" * 30  # holds "admin"
HIDDEN_URI = "skill://admin/SKILL.md"
ABSENT_URI = "skill://nosuch/SKILL.md"


def hidden_registry() -> Registry:
    made = Registry()
    made.register("demo.echo", Echo())
    made.register("admin.echo", Echo())
    return made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    config = tmp_path_factory.mktemp("skills") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="admin")),
        auth_tool_scopes=("admin.*=admin",),
        auth_filter_tools=True,
        explorer=True,
        allow_execute=True,  # the explorer's door reads resources only then
        mcp_config=str(config),
        skills=True,
    )
    async with running_http(Bridge.build(hidden_registry(), settings)) as base:
        yield base


async def error_of(call: Awaitable[Any]) -> dict[str, Any]:
    with pytest.raises(MCPError) as caught:
        await call
    return {"code": caught.value.code, "message": caught.value.message, "data": caught.value.error.data}


def without_uri(answer: dict[str, Any], uri: str) -> str:
    return json.dumps(answer, sort_keys=True).replace(uri, "<uri>")


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("path", ["/mcp", "/explorer/mcp", "/toolsets/team/mcp"])
async def test_a_hidden_tools_skill_is_absent_on_every_route(url: str, path: str, mode: str) -> None:
    async with endpoint_client(f"{url}{path}", ALICE, mode) as client:
        listed = await skills_request(client.session, "skills/list")
        assert [entry["uri"] for entry in listed["skills"]] == ["skill://demo/SKILL.md"]
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert HIDDEN_URI not in resources and "skill://demo/SKILL.md" in resources
        for method, call in (
            ("skills/get", lambda uri: skills_request(client.session, "skills/get", uri=uri)),
            ("resources/read", client.read_resource),
        ):
            hidden, absent = await error_of(call(HIDDEN_URI)), await error_of(call(ABSENT_URI))
            assert without_uri(hidden, HIDDEN_URI) == without_uri(absent, ABSENT_URI), method
            assert hidden["code"] == -32602, (method, hidden)
        other_file = await error_of(client.read_resource("skill://admin/other.md"))
        assert other_file["code"] == -32602
    async with endpoint_client(f"{url}{path}", CAROL, mode) as client:  # there for whoever sees its tools
        listed = await skills_request(client.session, "skills/list")
        assert [entry["uri"] for entry in listed["skills"]] == [HIDDEN_URI, "skill://demo/SKILL.md"]
        read = await client.read_resource(HIDDEN_URI)
        assert "admin.echo" in getattr(read.contents[0], "text", "")


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_anonymous_caller_sees_only_skills_of_public_tools(mode: str) -> None:
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(CAROL, "carol", scopes="admin"),),
        auth_public_tools=("demo.*",),
        skills=True,
    )
    async with running_http(Bridge.build(hidden_registry(), settings)) as base:
        async with create_mcp_http_client() as http:
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport, mode=mode, cache=None) as client:
                listed = await skills_request(client.session, "skills/list")
                resources = [str(r.uri) for r in (await client.list_resources()).resources]
                hidden = await error_of(client.read_resource(HIDDEN_URI))
        async with endpoint_client(f"{base}/mcp", CAROL, mode) as client:
            signed_in = await skills_request(client.session, "skills/list")
            if mode == "auto":  # what she is listed, the anonymous caller is not: never a shared cache's
                raw = await client.session.send_request(
                    types.ListResourcesRequest(params=types.PaginatedRequestParams()), AnyResult
                )
                assert signed_in["cacheScope"] == raw.model_dump(by_alias=True)["cacheScope"] == "private"
    assert [entry["uri"] for entry in listed["skills"]] == ["skill://demo/SKILL.md"]
    assert HIDDEN_URI not in resources and hidden["code"] == -32602
    assert [entry["uri"] for entry in signed_in["skills"]] == [HIDDEN_URI, "skill://demo/SKILL.md"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_changed_on_disk_is_not_served_against_the_old_digest(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "skills", "notes")
    (folder / "ref.md").write_text("the text that was listed")
    served = Bridge.build(hidden_registry(), Settings(skills=True, skills_dir=str(tmp_path / "skills")))
    (folder / "ref.md").write_text("a swap after the start")  # what is served was read once, with its digest
    async with Client(served.server, mode="auto", cache=None) as client:
        got = await skills_request(client.session, "skills/get", uri="skill://notes/SKILL.md")
        for item in got["skill"]["resources"]:
            [content] = (await client.read_resource(item["uri"])).contents
            data = getattr(content, "text", "").encode()
            assert item["digest"] == "sha256:" + hashlib.sha256(data).hexdigest() and item["size"] == len(data)
        [ref] = (await client.read_resource("skill://notes/ref.md")).contents
    assert getattr(ref, "text", None) == "the text that was listed"
