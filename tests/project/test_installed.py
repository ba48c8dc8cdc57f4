"""This project installed into another project as docs/install.md says, in fresh virtual environments
outside the repository, and the testing page run there as written.

The pages' commands are read from their text (the blocks marked ``<!-- run by tests/project/test_installed.py -->``)
and run by bash in a scratch project with the fresh environment first on ``PATH``, ``/path/to/apcore-mcp``
standing for a copy of this work tree. Dependencies come from the package index, pinned by constraints.txt
(``PIP_CONSTRAINT``), through pip's cache. Three environments: a built wheel (the CLI on stdio and HTTP, the
explorer's page, every example of the testing page and its scripted-server command), the checkout path (then
the page's uninstall) and an editable install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from apcore_mcp._version import __version__
from apcore_mcp.testing import command_server, start_server, stop_process_group

REPO = Path(__file__).resolve().parents[2]
INSTALL_PAGE = REPO / "docs" / "install.md"
TESTING_PAGE = REPO / "docs" / "testing.md"
PLACEHOLDER = "/path/to/apcore-mcp"
MARKED = re.compile(r"<!-- run by tests/project/test_installed\.py -->\n```bash\n(.*?)```", re.DOTALL)
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
VERSION_LINE = re.compile(r"apcore-mcp (\S+) \(apcore (\S+), mcp (\S+), Python (\S+)\) from (\S+)")
LOG_LINE = re.compile(
    r"INFO apcore_mcp\.run\.serve: apcore-mcp (\S+) \(apcore \S+, mcp \S+, Python \S+\); clients see server '[^']*' version \S+"
)
INSTALLED_VERSIONS = (
    "import platform; from importlib.metadata import version; "
    "print(version('apcore'), version('mcp'), platform.python_version())"
)
COMMAND_SECONDS = 300  # a pip install resolving from a cold cache
EXAMPLE_TESTS = 17  # the testing page's tests: stats.mcp.yaml 2 cases x 4 transport/era pairs, 6 + 3 in its files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


# -- the pages' commands ------------------------------------------------------------------------


def marked(page: Path) -> list[str]:
    return MARKED.findall(page.read_text())


def page_block(page: Path, start: str) -> str:
    """The one marked bash block of ``page`` that starts with ``start``, as written."""
    found = [block for block in marked(page) if block.startswith(start)]
    assert len(found) == 1, f"{page.name}: expected one block to run starting {start!r}, found {found}"
    return found[0]


CHECKOUT = (INSTALL_PAGE, 'pip install "apcore-mcp[testing] @ file://')
EDITABLE = (INSTALL_PAGE, "pip install -e ")
BUILD = (INSTALL_PAGE, "cd ")
WHEEL = (INSTALL_PAGE, 'pip install "apcore-mcp[testing] @ file:///path/to/apcore-mcp/dist/')
CHECK = (INSTALL_PAGE, "apcore-mcp --version")
UNINSTALL = (INSTALL_PAGE, "pip uninstall ")
TESTING_INSTALL = (TESTING_PAGE, "pip install ")
ROLES = [CHECKOUT, EDITABLE, BUILD, WHEEL, CHECK, UNINSTALL, TESTING_INSTALL]


def block(role: tuple[Path, str]) -> str:
    page, start = role
    if role is CHECKOUT:  # the wheel's command starts the same way
        found = [b for b in marked(page) if b.startswith(start) and "/dist/" not in b]
        assert len(found) == 1, found
        return found[0]
    return page_block(page, start)


def page_files() -> dict[str, str]:
    return {
        body.split("\n", 1)[0].removeprefix("# file: ").strip(): body
        for _, body in BLOCK.findall(TESTING_PAGE.read_text())
        if body.startswith("# file: ")
    }


def page_command(name: str) -> str:
    bodies: list[str] = [
        body for _, body in BLOCK.findall(TESTING_PAGE.read_text()) if body.startswith(f"# run: {name}\n")
    ]
    assert len(bodies) == 1, f"docs/testing.md: expected one '# run: {name}' block"
    return bodies[0].split("\n", 1)[1]


# -- environments -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment and the shell a user of it types into."""

    path: Path
    checkout: Path

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def env(self) -> dict[str, str]:
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "COVERAGE_", "VIRTUAL_ENV", "PYTEST_", "APCORE_MCP_"))
        }
        path = os.pathsep.join([str(self.bin), *(p for p in inherited.get("PATH", "").split(os.pathsep) if p)])
        return {
            **inherited,
            "PATH": path,
            "VIRTUAL_ENV": str(self.path),
            "PIP_CONSTRAINT": str(REPO / "constraints.txt"),
        }

    def run(self, command: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``command`` (a page's block) by bash, ``/path/to/apcore-mcp`` meaning the checkout copy."""
        script = command.replace(PLACEHOLDER, str(self.checkout))
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: stopped whole on a timeout
        )
        try:
            out, err = proc.communicate(timeout=COMMAND_SECONDS)
        except subprocess.TimeoutExpired:
            stop_process_group(proc)
            out, err = proc.communicate()
        done = subprocess.CompletedProcess(script, proc.returncode, out.decode(), err.decode())
        if check:
            assert done.returncode == 0, f"$ {script}\n{done.stdout}\n{done.stderr}"
        return done

    def site_packages(self) -> Path:
        found = list((self.path / "lib").glob("python3*/site-packages"))
        assert len(found) == 1, found
        return found[0]


def make_venv(root: Path, checkout: Path) -> Venv:
    assert not root.resolve().is_relative_to(REPO), "outside the repository"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=COMMAND_SECONDS)
    return Venv(root, checkout)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this work tree (what git would check out, with its uncommitted changes)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    target = tmp_path_factory.mktemp("checkout") / "apcore-mcp"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the work tree is not there to copy
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The other project: the testing page's layout, ``extensions/`` next to ``tests/``."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(REPO / "examples" / "extensions", root / "extensions", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory, checkout: Path, project: Path) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp("wheel") / "venv", checkout)
    venv.run(block(BUILD), cwd=project)
    wheel = f"apcore_mcp-{__version__}-py3-none-any.whl"
    assert [p.name for p in (checkout / "dist").iterdir()] == [wheel]
    install = block(WHEEL)
    assert f"/dist/{wheel}" in install, f"docs/install.md names another wheel than {wheel}: update the page"
    venv.run(install, cwd=project)
    return venv


def check_version(venv: Venv, project: Path, imported_from: Path) -> None:
    """The page's check block: this project, its dependencies as installed there, imported from where said."""
    done = venv.run(block(CHECK), cwd=project)
    first = done.stdout.splitlines()[0]
    match = VERSION_LINE.fullmatch(first)
    assert match, first
    installed = subprocess.run(
        [str(venv.bin / "python"), "-c", INSTALLED_VERSIONS], capture_output=True, text=True, timeout=60, env=venv.env()
    )
    assert list(match.groups()) == [__version__, *installed.stdout.split(), str(imported_from)], installed.stderr
    assert f"Name: apcore-mcp\nVersion: {__version__}\n" in done.stdout
    requires = re.search(r"^Requires: (.*)$", done.stdout, re.MULTILINE)
    assert requires and "mcp" in requires.group(1).split(", "), done.stdout


def test_every_command_the_pages_give_this_test_is_run() -> None:
    claimed = [block(role) for role in ROLES]
    assert sorted(claimed) == sorted([*marked(INSTALL_PAGE), *marked(TESTING_PAGE)])
    assert block(TESTING_INSTALL).split("#")[0].strip() == block(CHECKOUT).strip()  # one command, one meaning
    sample = next(b for lang, b in BLOCK.findall(INSTALL_PAGE.read_text()) if lang == "text" and "from " in b)
    assert VERSION_LINE.fullmatch(sample.strip()), sample
    log_sample = next(b for lang, b in BLOCK.findall(INSTALL_PAGE.read_text()) if lang == "text" and "INFO" in b)
    assert LOG_LINE.fullmatch(log_sample.strip()), log_sample


# -- a built wheel ------------------------------------------------------------------------------


def test_the_wheel_installs_this_project(wheel_venv: Venv, project: Path) -> None:
    check_version(wheel_venv, project, wheel_venv.site_packages() / "apcore_mcp")


async def test_the_installed_cli_serves_stdio_like_the_checkout(wheel_venv: Venv, project: Path) -> None:
    extensions = project / "extensions"

    async def tools(command: str, *args: str, env: dict[str, str] | None) -> list[dict[str, Any]]:
        params = StdioServerParameters(command=command, args=[*args, "--extensions-dir", str(extensions)], env=env)
        with (project / "stdio.log").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]

    installed = await tools(str(wheel_venv.bin / "apcore-mcp"), env=wheel_venv.env())
    ours = await tools(sys.executable, "-m", "apcore_mcp", env=dict(os.environ))
    assert installed == ours and {"text.stats", "files.purge"} <= {tool["name"] for tool in installed}


def test_the_installed_http_server_serves_health_and_the_explorer_page(wheel_venv: Venv, project: Path) -> None:
    packaged = wheel_venv.site_packages() / "apcore_mcp" / "static" / "explorer.html"
    assert packaged.read_bytes() == (REPO / "static" / "explorer.html").read_bytes()
    argv = [str(wheel_venv.bin / "apcore-mcp"), "--extensions-dir", str(project / "extensions"), "--explorer"]
    argv += ["--transport", "{transport}", "--host", "{host}", "--port", "{port}", "--log-level", "INFO"]
    command = command_server(argv, env=wheel_venv.env(), cwd=project, health_path="/health")
    server = start_server(command, "streamable-http", project / "http-run")
    try:
        with urllib.request.urlopen(f"{server.base_url}/health", timeout=10) as health:
            assert json.loads(health.read())["status"] == "ok"
        with urllib.request.urlopen(f"{server.base_url}/explorer/", timeout=10) as page:
            assert page.read() == packaged.read_bytes()
    finally:
        server.stop()
    started = LOG_LINE.search(server.output())
    assert started and started.group(1) == __version__, server.output()


def test_the_testing_page_runs_as_written_in_the_installed_project(wheel_venv: Venv, project: Path) -> None:
    for name, body in page_files().items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(body)
    done = wheel_venv.run(page_command("the project's tests"), cwd=project, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"=+ {EXAMPLE_TESTS} passed in [\d.]+s( \([\d:]+\))? =+", summary), done.stdout


def test_the_testing_page_scripted_server_command_runs_installed(wheel_venv: Venv, project: Path) -> None:
    (project / "tests").mkdir(exist_ok=True)
    (project / "tests" / "weather.script.yaml").write_text(page_files()["tests/weather.script.yaml"])
    words = page_command("scripted-cli").split()
    assert words[0] == "python" and "--port" in words
    # As typed in the environment's shell (its python), on a free port instead of the page's 8765.
    words[0], words[words.index("--port") + 1] = str(wheel_venv.bin / "python"), "{port}"
    command = command_server(words, env=wheel_venv.env(), cwd=project, health_path="/health")
    server = start_server(command, "streamable-http", project / "scripted-run")
    try:
        with urllib.request.urlopen(f"{server.base_url}/requests", timeout=10) as record:
            assert json.loads(record.read()) == []
    finally:
        server.stop()
    assert (project / "requests.jsonl").exists()


# -- a checkout path, then removed; an editable install -----------------------------------------


def test_the_checkout_path_installs_this_project_and_the_page_removes_it(
    tmp_path: Path, checkout: Path, project: Path
) -> None:
    venv = make_venv(tmp_path / "venv", checkout)
    venv.run(block(TESTING_INSTALL), cwd=project)
    check_version(venv, project, venv.site_packages() / "apcore_mcp")
    venv.run("python -c 'import apcore_mcp.testing.plugin, pytest_asyncio, yaml'", cwd=project)  # the extra
    venv.run(block(UNINSTALL), cwd=project)
    assert venv.run("pip show apcore-mcp", cwd=project, check=False).returncode != 0
    assert not (venv.bin / "apcore-mcp").exists()


def test_the_editable_install_runs_the_checkout(tmp_path: Path, checkout: Path, project: Path) -> None:
    venv = make_venv(tmp_path / "venv", checkout)
    venv.run(block(EDITABLE), cwd=project)
    check_version(venv, project, checkout / "src" / "apcore_mcp")
