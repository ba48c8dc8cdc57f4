"""An upstream's skills relayed: fetched at mount over a real stdio connection, byte for byte,
namespaced ``<server>/<skill>``, fetched again when the upstream says its list changed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from apcore import Context, Registry
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.tools.skills.model import upstream_origin
from apcore_mcp.upstream.skills import SkillShelf

from tests._support.named_upstream import named_entry
from tests._support.sessions import Inbox, open_session, running_http
from tests._support.skills import skills_request
from tests._support.skills_upstream import skill, skills_entry, write_spec
from tests._support.upstreams import eventually, mounted

FORMS = "Fill the form field by field.\n"


async def test_skills_relayed_unchanged_and_fetched_again_on_list_changed(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "spec.json",
        [skill("pdf", "Read PDF files", "Use `search` to find one.", files={"ref/FORMS.md": FORMS})],
        tools=("search", "purge"),
    )
    data = {"mcpServers": {"docs": skills_entry(spec)}}
    async with mounted(data, skills=SkillShelf()) as mount:
        shelf = mount.runtime.skills
        assert shelf is not None
        (relayed,) = shelf.skills()
        assert relayed.name == "docs/pdf"
        assert relayed.origin == upstream_origin("docs")
        served = {path: f.data.decode() for path, f in relayed.files.items()}
        assert served == {
            "SKILL.md": skill("pdf", "Read PDF files", "Use `search` to find one.")["files"]["SKILL.md"],
            "ref/FORMS.md": FORMS,
        }
        assert relayed.files["ref/FORMS.md"].sha256 == hashlib.sha256(FORMS.encode()).hexdigest()
        assert relayed.tools == ("docs.search",)  # the tool its SKILL.md mentions, as our module id

        write_spec(spec, [skill("pdf", "Read PDF files"), skill("sheets", "Edit spreadsheets")], tools=("search",))
        await mount.executor.call_async("docs.announce", {}, Context.create())
        await eventually(lambda: len(shelf.skills()) == 2, what="the new skill relayed")
        assert [s.name for s in shelf.skills()] == ["docs/pdf", "docs/sheets"]

    assert shelf.skills() == ()  # unmounted: nothing of it is served


async def test_a_server_without_the_extension_relays_nothing() -> None:
    async with mounted({"mcpServers": {"plain": named_entry("look")}}, skills=SkillShelf()) as mount:
        assert mount.runtime.skills is not None and mount.runtime.skills.skills() == ()


async def test_a_relayed_change_is_announced_to_our_clients_and_served(tmp_path: Path) -> None:
    """The upstream says its list changed; our handshake-era client hears ``resources/list_changed``."""
    spec = write_spec(tmp_path / "spec.json", [skill("pdf", "Read PDF files")])
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": skills_entry(spec)}}))
    # A new skill of a pinned server waits for approval unless accepted at first sight (test_skill_pins.py).
    settings = Settings(mcp_config=str(tmp_path / "mcp.json"), skills=True, dynamic=True, pins_accept_new=True)
    inbox = Inbox()
    async with running_http(Bridge.build(Registry(), settings)) as url, open_session("http", url, inbox) as client:
        assert await relayed_uris(client) == ["skill://docs/pdf/SKILL.md"]
        write_spec(spec, [skill("pdf", "Read PDF files"), skill("sheets", "Edit spreadsheets")])
        inbox.clear()
        await client.call_tool("docs.announce", {})
        await inbox.wait_for("notifications/resources/list_changed")
        assert await relayed_uris(client) == ["skill://docs/pdf/SKILL.md", "skill://docs/sheets/SKILL.md"]


async def relayed_uris(client: Client) -> list[str]:
    """The relayed skills of ``skills/list`` (beside them is the skill generated for the ``docs.*`` tools)."""
    listed = await skills_request(client.session, "skills/list")
    return [entry["uri"] for entry in listed["skills"] if entry["uri"].count("/") == 4]


async def test_with_skills_off_no_upstream_is_asked_for_skills(tmp_path: Path) -> None:
    asked = tmp_path / "asked.log"
    spec = write_spec(tmp_path / "spec.json", [skill("pdf", "Read PDF files")], log=asked)
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": skills_entry(spec)}}))
    async with running_http(Bridge.build(Registry(), Settings(mcp_config=str(tmp_path / "mcp.json")))) as url:
        async with open_session("http", url, Inbox()) as client:
            assert (await client.call_tool("docs.search", {})).is_error is not True  # mounted and answering
    assert not asked.exists()
