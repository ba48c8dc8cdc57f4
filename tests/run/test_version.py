"""Which apcore-mcp is installed: ``apcore-mcp --version`` and a server's start log name this
package's version with the apcore and mcp releases under it, so the unrelated ``apcore-mcp`` of the
package index (0.23.x, on mcp 1.x) cannot pass for it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

from apcore_mcp._version import __version__
from apcore_mcp.testing import apcore_server, start_server

from tests._support.versions import expected_line, package_dir

REPO = Path(__file__).resolve().parents[2]
EXTENSIONS = REPO / "examples" / "extensions"


def test_the_version_names_the_package_its_dependencies_and_where_it_is_installed() -> None:
    script = Path(sys.executable).with_name("apcore-mcp")
    for argv in ([str(script), "--version"], [sys.executable, "-m", "apcore_mcp", "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert done.stdout == f"{expected_line()} from {package_dir()}\n"


def test_metadata_and_the_package_agree_on_the_version() -> None:
    assert metadata.version("apcore-mcp") == __version__


async def test_the_start_log_names_the_version_and_what_clients_see(tmp_path: Path) -> None:
    command = apcore_server(EXTENSIONS, "--log-level", "INFO", "--name", "weather", "--server-version", "2.0.1")
    server = start_server(command, "streamable-http", tmp_path)
    try:
        async with server.client() as client:
            assert client.server_info is not None
            seen = (client.server_info.name, client.server_info.version)
    finally:
        server.stop()
    assert seen == ("weather", "2.0.1")
    assert f"{expected_line()}; clients see server 'weather' version 2.0.1" in server.output()
