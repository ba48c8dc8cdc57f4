"""The documentation site read offline, and the blocks of the docs no test names: unmarked Python
blocks run, JSON and YAML blocks parse (``tests/project/test_docs.py`` says how every block is
accounted for)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from apcore_mcp.upstream.config.parse import parse_config

from tests._support.browser import launched_browser
from tests._support.doc_blocks import (
    BIN,
    DOCS,
    REPO,
    Block,
    clean_env,
    unmarked,
)

# -- the site, read offline -----------------------------------------------------------------------

EXTERNAL_ASSET = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*?\b(?:src|href)=[\"']?(?:https?:)?//", re.I
)
EXTERNAL_CSS = re.compile(r"(?:url\(|@import)\s*[\"']?(?:https?:)?//", re.I)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as scripts/test.sh builds it (``mkdocs build --strict``), in a directory of its own."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=True,
        timeout=300,
    )
    return site


def test_the_built_site_loads_no_font_script_or_style_from_the_network(built_site: Path) -> None:
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= len(list(DOCS.rglob("*.md")))
    found = [
        f"{path.relative_to(built_site)}: {match.group(0)}"
        for path in [*pages, *built_site.rglob("*.css")]
        for match in (EXTERNAL_CSS if path.suffix == ".css" else EXTERNAL_ASSET).finditer(path.read_text())
    ]
    assert found == []
    assert (built_site / "search" / "search_index.js").is_file()  # search without a server (offline plugin)


@pytest.mark.browser
async def test_the_built_site_is_read_and_searched_from_disk(built_site: Path) -> None:
    async with launched_browser() as browser:
        page = await browser.new_page()
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        await page.goto((built_site / "index.html").as_uri())
        await page.click("a[href='quickstart.html']")
        await page.wait_for_load_state("load")
        assert page.url.endswith("/quickstart.html")
        query = page.locator("input[data-md-component=search-query]")
        for _ in range(50):  # the search key works once the page's script has set its handlers up
            await page.keyboard.press("/")
            if await query.evaluate("input => input === document.activeElement"):
                break
            await page.wait_for_timeout(100)
        await query.type("replicas", delay=20)
        await page.wait_for_selector(".md-search-result__item", timeout=15_000)
        assert await page.locator(".md-search-result__item").count() > 0
    assert requested
    assert [url for url in requested if not url.startswith("file://")] == []


# -- unmarked blocks: run or parsed ------------------------------------------------------------------


@pytest.mark.parametrize("block", unmarked("python"), ids=lambda block: block.where)
def test_an_unmarked_python_block_runs(block: Block) -> None:
    done = subprocess.run(
        [sys.executable, "-c", block.body],
        cwd=REPO,
        input="",  # a stdio server in the block sees its client close stdin
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
    )
    assert done.returncode == 0, f"{block.where}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", unmarked("json"), ids=lambda block: block.where)
def test_an_unmarked_json_block_parses_and_an_mcp_servers_file_checks(block: Block) -> None:
    data = json.loads(block.body)
    if "mcpServers" in data:
        variables = set(re.findall(r"\$\{(\w+)", block.body))
        config = parse_config(data, dict.fromkeys(variables, "x"), strict=True, source=block.where)
        assert set(config.servers) | set(config.skipped) == set(data["mcpServers"])


def test_every_unmarked_yaml_block_parses() -> None:
    for block in unmarked("yaml"):
        assert yaml.safe_load(block.body) is not None, block.where
