"""The Skills extension (SEP-2640) through the Python SDK's client, in memory, in both eras."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry
from mcp import Client
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.mcp.skills import SKILLS_EXTENSION
from apcore_mcp.settings import Settings
from apcore_mcp.tools.problems import ModuleProblemsError
from apcore_mcp.tools.skills.frontmatter import parse_frontmatter

from tests._support.modules import Echo, module_of
from tests._support.sessions import Inbox, open_session
from tests._support.skills import skills_request, write_skill

MODES = ["legacy", "auto"]  # 2025-11-25, 2026-07-28


def ping() -> dict[str, str]:
    """Answer pong."""
    return {"pong": "pong"}


def registry() -> Registry:
    made = Registry()
    made.register("demo.echo", Echo())
    made.register("files.echo", Echo())
    return made


def bridge(tmp_path: Path, **settings: Any) -> Bridge:
    folder = write_skill(tmp_path / "skills", "files", body="Hand-written.\n")
    (folder / "icon.bin").write_bytes(b"\xff\x00\xfe")
    return Bridge.build(registry(), Settings(skills=True, skills_dir=str(tmp_path / "skills"), **settings))


async def read_bytes(client: Client, uri: str) -> bytes:
    [content] = (await client.read_resource(uri)).contents
    text = getattr(content, "text", None)
    return text.encode("utf-8") if text is not None else base64.b64decode(content.blob)  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_listed_skills_carry_files_whose_bytes_match_their_digests(tmp_path: Path, mode: str) -> None:
    async with Client(bridge(tmp_path).server, mode=mode, cache=None) as client:
        if mode == "auto":  # capabilities.extensions exists on the 2026-07-28 wire only
            assert (client.server_capabilities.extensions or {})[SKILLS_EXTENSION] == {}
        listed = await skills_request(client.session, "skills/list")
        entries = {entry["uri"]: entry for entry in listed["skills"]}
        assert list(entries) == ["skill://demo/SKILL.md", "skill://files/SKILL.md"]
        for uri, entry in entries.items():
            text = (await read_bytes(client, uri)).decode("utf-8")
            assert entry["frontmatter"] == parse_frontmatter(text)
            for item in entry["resources"]:
                data = await read_bytes(client, item["uri"])
                assert item["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
                assert item["size"] == len(data)
        files = entries["skill://files/SKILL.md"]
        assert [r["uri"] for r in files["resources"]] == ["skill://files/SKILL.md", "skill://files/icon.bin"]
        assert "Hand-written." in (await read_bytes(client, "skill://files/SKILL.md")).decode()  # it won
        got = await skills_request(client.session, "skills/get", uri="skill://demo/SKILL.md")
        assert got["skill"] == entries["skill://demo/SKILL.md"] and "nextCursor" not in got
        if mode == "auto":
            assert (listed["ttlMs"], listed["cacheScope"]) == (60_000, "public")
            assert (got["ttlMs"], got["cacheScope"]) == (60_000, "public")
        else:
            assert "ttlMs" not in listed and "ttlMs" not in got
        listed_resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        demo = listed_resources["skill://demo/SKILL.md"]
        assert (demo.name, demo.mime_type) == ("demo", "text/markdown")


@pytest.mark.parametrize("mode", MODES)
async def test_an_unknown_skill_or_cursor_is_invalid_params(tmp_path: Path, mode: str) -> None:
    async with Client(bridge(tmp_path).server, mode=mode, cache=None) as client:
        for params in ({"uri": "skill://nosuch/SKILL.md"}, {"uri": "skill://demo/other.md"}, {"uri": "demo"}):
            with pytest.raises(MCPError) as caught:
                await skills_request(client.session, "skills/get", **params)
            assert caught.value.code == -32602
        with pytest.raises(MCPError) as caught:
            await skills_request(client.session, "skills/list", cursor="forged")
        assert caught.value.code == -32602


async def test_a_registry_change_regenerates_the_skills(tmp_path: Path) -> None:
    served = bridge(tmp_path, dynamic=True)
    async with Client(served.server, mode="auto", cache=None) as client:
        before = await skills_request(client.session, "skills/list")
        assert before["ttlMs"] == 0  # a live catalog is stale at once
        served.registry.register("extra.echo", Echo())
        served.catalog.catch_up()
        after = await skills_request(client.session, "skills/list")
    assert [e["uri"] for e in before["skills"]] == ["skill://demo/SKILL.md", "skill://files/SKILL.md"]
    assert [e["uri"] for e in after["skills"]] == [
        "skill://demo/SKILL.md",
        "skill://extra/SKILL.md",
        "skill://files/SKILL.md",
    ]


async def test_skills_are_off_unless_asked_for() -> None:
    async with Client(Bridge.build(registry()).server, mode="auto", cache=None) as client:
        assert SKILLS_EXTENSION not in (client.server_capabilities.extensions or {})
        with pytest.raises(MCPError) as caught:
            await skills_request(client.session, "skills/list")
        assert caught.value.code == -32601
        assert not [r for r in (await client.list_resources()).resources if str(r.uri).startswith("skill://")]


async def test_a_tool_change_announces_the_resource_list_changed(tmp_path: Path) -> None:
    served = bridge(tmp_path, dynamic=True)
    inbox = Inbox()
    async with BridgeService(served), open_session("memory", served, inbox) as client:
        await client.list_tools()  # the connection is known to the notifier once a request is served
        served.registry.register("extra.ping", module_of(ping))  # no documentation: only the skills change
        await inbox.wait_for("notifications/resources/list_changed")


def test_a_bad_skill_folder_is_a_warning_or_with_strict_modules_no_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "skills" / "Bad_Name").mkdir(parents=True)
    served = Bridge.build(registry(), Settings(skills=True, skills_dir=str(tmp_path / "skills")))
    assert served.parts.skills is not None and len(served.parts.skills.current()) == 2  # the generated ones
    assert "skill not served" in caplog.text and "Bad_Name" in caplog.text
    with pytest.raises(ModuleProblemsError, match="Bad_Name"):
        Bridge.build(registry(), Settings(skills=True, skills_dir=str(tmp_path / "skills"), strict_modules=True))


async def test_in_search_mode_the_skills_describe_the_real_tools(tmp_path: Path) -> None:
    served = Bridge.build(registry(), Settings(skills=True, tool_mode="search"))
    async with Client(served.server, mode="auto", cache=None) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"search_tools", "describe_tool", "invoke_tool"}
        listed = await skills_request(client.session, "skills/list")
        assert [e["uri"] for e in listed["skills"]] == ["skill://demo/SKILL.md", "skill://files/SKILL.md"]
        text = (await read_bytes(client, "skill://demo/SKILL.md")).decode()
    assert "call each through `invoke_tool`" in text and "`demo.echo`" in text
