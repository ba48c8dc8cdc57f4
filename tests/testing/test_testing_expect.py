"""Declarative cases without a server: the expectation checks (pure) and the validation of
``*.mcp.yaml`` files (every error names the file and the field)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apcore_mcp.testing.expect import MISSING, Expectation, Outcome, check, is_subset, json_path
from apcore_mcp.testing.yaml_cases import load_case_file

from tests._support.documents import refusal

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
RESULT = {
    "content": [{"type": "text", "text": "3 words"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
    "structuredContent": {"words": 3, "top": [{"word": "a", "count": 2}, {"word": "b", "count": 1}], "ok": True},
    "isError": False,
}


@pytest.mark.parametrize(
    ("expected", "actual", "matches"),
    [
        ({"words": 3}, {"words": 3, "lines": 1}, True),
        ({"words": 3.0}, {"words": 3}, True),
        ({"ok": 1}, {"ok": True}, False),  # a boolean is not a number
        ({"top": [{"word": "a"}]}, {"top": [{"word": "a"}, {"word": "b"}]}, False),  # lists keep their length
        ({"top": [{"word": "a"}, {}]}, {"top": [{"word": "a", "n": 1}, {"word": "b"}]}, True),
        ({"missing": None}, {}, False),
        ("3", 3, False),
    ],
)
def test_subset_matching(expected: object, actual: object, matches: bool) -> None:
    assert is_subset(expected, actual) is matches


def test_json_paths() -> None:
    assert json_path(RESULT, "$.structuredContent.top[*].word") == ["a", "b"]
    assert json_path(RESULT, "$.content[1].mimeType") == "image/png"
    assert json_path(RESULT, "$['structuredContent']['words']") == 3
    assert json_path(RESULT, "$.content[5].text") is MISSING
    assert json_path(RESULT, "$.nothing.here") is MISSING
    with pytest.raises(ValueError, match="starts with"):
        json_path(RESULT, "structuredContent")


def test_a_matching_outcome_has_no_problems() -> None:
    expected = Expectation(
        is_error=False,
        text="3 words",
        text_contains=("words",),
        text_regex=re.compile(r"^\d words$"),
        structured={"words": 3},
        json_path={"$.structuredContent.top[0].count": 2},
        content_types=("text", "image"),
        progress_count=2,
    )
    assert check(expected, Outcome(result=RESULT, progress=(1.0, 2.0))) == []


def test_every_mismatch_is_reported_with_a_diff() -> None:
    expected = Expectation(
        is_error=True,
        text="4 words",
        text_contains=("lines",),
        structured={"words": 4},
        json_path={"$.structuredContent.top[9]": 1},
        content_types=("text",),
        progress_count=1,
    )
    problems = check(expected, Outcome(result=RESULT))
    assert problems[0] == "is_error: expected True, got False; text: '3 words'"
    assert problems[1] == "text differs:\n--- expected\n+++ actual\n@@ -1 +1 @@\n-4 words\n+3 words"
    assert problems[2] == "text_contains: 'lines' is not in '3 words'"
    assert problems[3].startswith("structured content does not contain the expected values:\n--- expected\n+++ actual")
    assert '-  "words": 4' in problems[3]
    assert '+  "words": 3' in problems[3]
    assert problems[4].startswith("json_path $.structuredContent.top[9]: nothing there in\n{")
    assert problems[5] == "content_types: expected ['text'], got ['text', 'image']"
    assert problems[6] == "progress_count: expected 1, got 0"
    assert len(problems) == 7


def test_protocol_errors_against_expectations() -> None:
    error = Outcome(error_code=-32602, error_message="Unknown tool: x")
    assert check(Expectation(), error) == ["unexpected JSON-RPC error -32602: Unknown tool: x"]
    assert check(Expectation(error_code=-32602, error_message="Unknown tool"), error) == []
    assert check(Expectation(error_message="x"), error) == []
    assert check(Expectation(error_code=-32603), error) == ["error_code: expected -32603, got -32602 (Unknown tool: x)"]
    wanted = check(Expectation(error_code=-32602), Outcome(result=RESULT))
    assert wanted[0].startswith("expected JSON-RPC error -32602, got a result:")


BAD_FILES = [
    ("", "(top level): expected a mapping, got nothing"),
    ("cases: [{tool: t}]", "server: required field is missing"),
    ("server: {}\ncases: [{tool: t}]", "server: give exactly one of: extensions_dir, script, command, url"),
    ("server: {url: u, command: [c]}\ncases: [{tool: t}]", "server: give exactly one of"),
    ("server: {extensions_dir: nowhere}\ncases: [{tool: t}]", "server.extensions_dir: not a directory:"),
    ("server: {script: none.yaml}\ncases: [{tool: t}]", "server.script: no such file:"),
    ("server: {url: u, transport: stdio}\ncases: [{tool: t}]", "server.transport: a URL server is reached over"),
    ("server: {url: u}\ntransports: [http]\ncases: [{tool: t}]", "transports: unknown value 'http'"),
    ("server: {url: u}\neras: [old]\ncases: [{tool: t}]", "eras: unknown value 'old'"),
    ("server: {url: u}\ncases: []", "cases: no cases"),
    ("server: {url: u}\ncases: [{tool: t, id: a}, {tool: t, id: a}]", "cases[1].id: duplicate case id 'a'"),
    ("server: {url: u}\ncases: [{arguments: {}}]", "cases[0].tool: required field is missing"),
    ("server: {url: u}\ncases: [{tool: t, arguments: [1]}]", "cases[0].arguments: expected a mapping, got a list"),
    (
        "server: {url: u}\ncases: [{tool: t, expect: {is_error: yes please}}]",
        "cases[0].expect.is_error: expected true or false",
    ),
    (
        "server: {url: u}\ncases: [{tool: t, expect: {json_path: {a.b: 1}}}]",
        "cases[0].expect.json_path.a.b: a JSON path starts with '$'",
    ),
    (
        "server: {url: u}\ncases: [{tool: t, expect: {progress_count: many}}]",
        "cases[0].expect.progress_count: expected an integer",
    ),
    (
        "server: {url: u}\ncases: [{tool: t, elicitation: {action: maybe}}]",
        "cases[0].elicitation.action: Input should be",
    ),
    ("server: {url: u}\ncases: [{tool: t, sampling: {}}]", "cases[0].sampling.text: required field is missing"),
    ("server: {url: u}\ncases:\n  - tool: t\n   bad: indent", "invalid YAML (line 4)"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_a_bad_case_file_names_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(load_case_file, tmp_path / "bad.mcp.yaml", text).startswith(message)


def test_a_good_case_file(tmp_path: Path) -> None:
    path = tmp_path / "good.mcp.yaml"
    path.write_text(
        f"server: {{extensions_dir: {EXTENSIONS}, args: [--prefix, text]}}\n"
        "transports: [sse, stdio]\n"
        "cases: [{tool: text.stats, arguments: {text: hi}, expect: {structured: {words: 1}}}]\n"
    )
    spec = load_case_file(path)
    assert list(spec.variants()) == [("sse", "legacy"), ("stdio", "legacy"), ("stdio", "modern")]
    assert spec.cases[0].id == "text.stats #1"
    assert spec.command is not None
    assert spec.command.argv[-2:] == ("--prefix", "text")
