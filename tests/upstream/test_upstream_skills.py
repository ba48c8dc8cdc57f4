"""An upstream's skills relayed: fetched at mount over a real stdio connection, byte for byte,
namespaced ``<server>/<skill>``, fetched again when the upstream says its list changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

from apcore import Context

from apcore_mcp.tools.skills.model import upstream_origin
from apcore_mcp.upstream.skills import SkillShelf

from tests._support.named_upstream import named_entry
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
