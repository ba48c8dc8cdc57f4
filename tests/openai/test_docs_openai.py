"""docs/testing.md's OpenAI test runs as written, in a project laid out as the page says (``extensions/``
beside ``tests/``, the page's ``pyproject.toml``), with no API key: the ``openai`` types and the Agents
SDK judge our tools offline. (docs/openai.md's own blocks are run by tests/project/test_docs.py.)"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.testing.test_testing_docs import DOC, REPO, file_blocks

pytest_plugins = ["pytester"]

MARK = "<!-- run by: tests/openai/test_docs_openai.py -->"


def openai_test() -> tuple[str, str]:
    """The path its first line names and the body of the page's one block marked as run here."""
    found = re.findall(rf"{re.escape(MARK)}\n```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(found) == 1, f"expected one marked python block in {DOC.name}, found {len(found)}"
    body = str(found[0])
    return body.split("\n", 1)[0].removeprefix("# ").strip(), body


def test_the_openai_test_of_the_testing_page_passes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)  # nothing of it may need a key or OpenAI's API
    shutil.copytree(REPO / "examples" / "extensions", pytester.path / "extensions")
    (pytester.path / "pyproject.toml").write_text(file_blocks()["pyproject.toml"])
    path, body = openai_test()
    assert path == "tests/test_openai_tools.py"
    (pytester.path / "tests").mkdir()
    (pytester.path / path).write_text(body)
    result = pytester.runpytest("-p", "no:cacheprovider", path)
    result.assert_outcomes(passed=2)
    assert "warning" not in result.stdout.lines[-1], result.stdout.str()
