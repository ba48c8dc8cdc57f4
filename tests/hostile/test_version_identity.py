"""Telling this apcore-mcp from the package index's unrelated one, when things around it are wrong.

Before, ``--version`` printed ``apcore-mcp 0.1.0`` and the start log no version at all: a server
started with ``--name apcore-mcp --server-version 0.23.3`` (the index package's name and release,
as a copied host configuration might say) looked, to its operator and its clients, exactly like the
other project. Now the log's first line names the package, the apcore and mcp releases it runs on,
and separately what clients are told; ``--version`` says the same whatever the environment holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests._support.versions import expected_line, package_dir

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"


async def test_an_impersonated_identity_does_not_hide_which_package_serves(tmp_path: Path) -> None:
    args = ["-m", "apcore_mcp", "--extensions-dir", str(EXTENSIONS)]
    args += ["--name", "apcore-mcp", "--server-version", "0.23.3"]
    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))  # the same package
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
    assert (initialized.server_info.name, initialized.server_info.version) == ("apcore-mcp", "0.23.3")  # as configured
    assert f"{expected_line()}; clients see server 'apcore-mcp' version 0.23.3" in log.read_text()


def test_the_version_answers_in_a_broken_environment_on_a_narrow_terminal(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "COLUMNS": "20",  # argparse rewraps a version text at the terminal width
        "APCORE_MCP_PORT": "not-a-port",
        "APCORE_MCP_EXTENSIONS_DIR": str(tmp_path / "missing"),
        "APCORE_MCP_LOG_LEVEL": "NOPE",
    }
    done = subprocess.run(
        [sys.executable, "-m", "apcore_mcp", "--version", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == f"{expected_line()} from {package_dir()}\n"
