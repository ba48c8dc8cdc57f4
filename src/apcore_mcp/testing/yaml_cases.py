"""Declarative test cases: a ``*.mcp.yaml`` file names a server, the transports to run on and
the tool calls to make, each with what the client must see.

```yaml
server:
  extensions_dir: ../examples/extensions   # or script: FILE, command: [ARGV...], url: URL
transports: [memory, streamable-http]        # default: all four (memory, stdio, streamable-http, sse)
eras: [legacy, modern]                       # default: both (SSE runs legacy only)
cases:
  - id: counts words
    tool: text.stats
    arguments: {text: "a b a"}
    expect: {is_error: false, structured: {words: 3}}
```

Paths are relative to the file. Every error names the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.testing.expect import MISSING, Expectation, Outcome, check_path
from apcore_mcp.testing.fields import DocumentError, Field, load_yaml
from apcore_mcp.testing.harness import (
    TRANSPORTS,
    RunningServer,
    ServerCommand,
    apcore_server,
    command_server,
    scripted_server,
)

ERAS = ("legacy", "modern")
_ROOT_KEYS = frozenset({"server", "transports", "eras", "cases"})
_SERVER_KINDS = ("extensions_dir", "script", "command", "url")
_SERVER_KEYS = frozenset({*_SERVER_KINDS, "args", "env", "cwd", "mcp_path", "sse_path", "health_path", "transport"})
_CASE_KEYS = frozenset({"id", "tool", "arguments", "meta", "expect", "elicitation", "sampling"})
_EXPECT_KEYS = frozenset(
    {
        "is_error",
        "text",
        "text_contains",
        "text_regex",
        "structured",
        "json_path",
        "error_code",
        "error_message",
        "content_types",
        "progress_count",
    }
)


@dataclass(frozen=True)
class Case:
    id: str
    tool: str
    arguments: dict[str, Any]
    expect: Expectation
    meta: dict[str, Any] | None = None
    elicitation: types.ElicitResult | None = None
    sampling: types.CreateMessageResult | None = None


@dataclass(frozen=True)
class CaseFile:
    """A parsed ``*.mcp.yaml``: a server to start (``command``) or to reach (``url``), and the cases."""

    path: Path
    command: ServerCommand | None
    url: str | None
    transports: tuple[str, ...]
    eras: tuple[str, ...]
    cases: tuple[Case, ...] = field(default=())
    scripted: bool = False

    def variants(self) -> Iterator[tuple[str, str]]:
        """``(transport, era)`` pairs to run every case on."""
        for transport in self.transports:
            for era in self.eras:
                if not (transport == "sse" and era == "modern"):
                    yield transport, era


def variant_id(transport: str, era: str) -> str:
    return transport if era == "legacy" else f"{transport}-modern"


def load_case_file(path: Path) -> CaseFile:
    """Read and validate a case file.

    Raises:
        DocumentError: the message names the file and the field.
    """
    root = load_yaml(path).mapping(_ROOT_KEYS, required=("server", "cases"))
    command, url, url_transport = _parse_server(root.child("server"), path.parent)
    scripted = root.child("server").child("script").present
    transports = _choices(root.child("transports"), TRANSPORTS) if root.child("transports").present else TRANSPORTS
    if url is not None:
        transports = (url_transport,)
    eras = _choices(root.child("eras"), ERAS) if root.child("eras").present else ERAS
    cases = tuple(_parse_case(node, i) for i, node in enumerate(root.child("cases").elements()))
    if not cases:
        raise root.child("cases").fail("no cases")
    seen: set[str] = set()
    for case, node in zip(cases, root.child("cases").elements(), strict=True):
        if case.id in seen:
            raise node.child("id").fail(f"duplicate case id {case.id!r}")
        seen.add(case.id)
    return CaseFile(path, command, url, transports, eras, cases, scripted)


def _choices(node: Field, allowed: tuple[str, ...]) -> tuple[str, ...]:
    values = node.string_list()
    for value in values:
        if value not in allowed:
            raise node.fail(f"unknown value {value!r} (expected some of: {', '.join(allowed)})")
    if not values:
        raise node.fail("give at least one")
    return tuple(values)


def _parse_server(node: Field, base: Path) -> tuple[ServerCommand | None, str | None, str]:
    node.mapping(_SERVER_KEYS)
    kinds = [kind for kind in _SERVER_KINDS if node.child(kind).present]
    if len(kinds) != 1:
        raise node.fail(f"give exactly one of: {', '.join(_SERVER_KINDS)}")
    kind, value = kinds[0], node.child(kinds[0])
    args = node.child("args").string_list() if node.child("args").present else []
    env = {k: v.string() for k, v in node.child("env").items()} if node.child("env").present else {}
    if kind == "url":
        transport = node.child("transport").string("streamable-http")
        if transport not in ("streamable-http", "sse"):
            raise node.child("transport").fail("a URL server is reached over streamable-http or sse")
        return None, value.string(), transport
    if kind == "command":
        cwd = node.child("cwd").optional_string()
        command = command_server(
            [*value.string_list(), *args],
            env=env,
            cwd=base / cwd if cwd else base,
            mcp_path=node.child("mcp_path").string("/mcp"),
            sse_path=node.child("sse_path").string("/sse"),
            health_path=node.child("health_path").optional_string(),
        )
        return command, None, ""
    target = base / value.string()
    if kind == "extensions_dir" and not target.is_dir():
        raise value.fail(f"not a directory: {target}")
    if kind == "script" and not target.is_file():
        raise value.fail(f"no such file: {target}")
    make = apcore_server if kind == "extensions_dir" else scripted_server
    return make(target, *args, env=env), None, ""


def _parse_case(node: Field, index: int) -> Case:
    node.mapping(_CASE_KEYS, required=("tool",))
    tool = node.child("tool").string()
    arguments = node.child("arguments")
    meta = node.child("meta")
    elicitation, sampling = node.child("elicitation"), node.child("sampling")
    return Case(
        id=node.child("id").string(f"{tool} #{index + 1}"),
        tool=tool,
        arguments=arguments.mapping().value if arguments.present else {},
        expect=_parse_expect(node.child("expect")) if node.child("expect").present else Expectation(),
        meta=meta.mapping().value if meta.present else None,
        elicitation=elicitation.model(types.ElicitResult) if elicitation.present else None,
        sampling=_sampling_answer(sampling) if sampling.present else None,
    )


def _sampling_answer(node: Field) -> types.CreateMessageResult:
    node.mapping(frozenset({"text", "model"}), required=("text",))
    text, model = node.child("text").string(), node.child("model").string("scripted-model")
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text=text), model=model)


def _parse_expect(node: Field) -> Expectation:
    node.mapping(_EXPECT_KEYS)
    get = node.child
    is_error = get("is_error")
    return Expectation(
        is_error=is_error.boolean() if is_error.present else None,
        text=_text(get("text")) if get("text").present else None,
        text_contains=tuple(get("text_contains").string_list()) if get("text_contains").present else (),
        text_regex=_regex(get("text_regex")) if get("text_regex").present else None,
        structured=get("structured").value if "structured" in node.value else MISSING,
        json_path=_paths(get("json_path")) if get("json_path").present else {},
        error_code=get("error_code").integer() if get("error_code").present else None,
        error_message=get("error_message").string() if get("error_message").present else None,
        content_types=tuple(get("content_types").string_list()) if get("content_types").present else None,
        progress_count=get("progress_count").integer() if get("progress_count").present else None,
    )


def _text(node: Field) -> str:
    if not isinstance(node.value, str):
        raise node.fail("expected a string")
    return node.value


def _regex(node: Field) -> re.Pattern[str]:
    try:
        return re.compile(node.string())
    except re.error as exc:
        raise node.fail(f"invalid regular expression: {exc}") from None


def _paths(node: Field) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, want in node.items():
        try:
            check_path(path)
        except ValueError as exc:
            raise want.fail(str(exc)) from None
        paths[path] = want.value
    return paths


async def run_case(server: RunningServer, era: str, case: Case) -> Outcome:
    """Call ``case.tool`` on ``server`` through a fresh SDK client and return what came back."""
    progress: list[float] = []

    async def on_progress(value: float, _total: float | None, _message: str | None) -> None:
        progress.append(value)

    options: dict[str, Any] = {}  # a callback only for what the case answers: otherwise the client is incapable
    if (elicited := case.elicitation) is not None:

        async def elicit(_ctx: ClientRequestContext, _params: types.ElicitRequestParams) -> types.ElicitResult:
            return elicited

        options["elicitation_callback"] = elicit
    if (sampled := case.sampling) is not None:

        async def sample(
            _ctx: ClientRequestContext, _params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult:
            return sampled

        options["sampling_callback"] = sample
    async with server.client(era=era, **options) as client:
        try:
            result = await client.call_tool(case.tool, case.arguments, progress_callback=on_progress, meta=case.meta)
        except MCPError as exc:
            return Outcome(error_code=exc.code, error_message=exc.message, progress=tuple(progress))
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return Outcome(result=wire, progress=tuple(progress))


__all__ = ["Case", "CaseFile", "DocumentError", "load_case_file", "run_case", "variant_id"]
