"""Span trees of real calls (the SDK's in-memory exporter), trace context in and out, and the ``OTEL_*`` set-up.

Each tree comes from ``tests/_support/span_tree.py`` in a subprocess (a tracer provider is
process-global): our server and an upstream of ours under uvicorn, the SDK's client or plain
HTTP requests in front. The ``OTEL_*`` tests run the installed ``apcore-mcp`` command with an
OTLP/HTTP receiver of our own in this process, so the exporter, its protocol and the
environment are all real.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from apcore_mcp.run.telemetry import TracingConfigError, configure_tracing, exporter_names
from apcore_mcp.testing import free_port

from tests._support.hostile import MODERN_META, modern_headers
from tests._support.processes import stop_process, wait_ok
from tests._support.sessions import REPO
from tests._support.span_tree import CALLER_SPAN, CALLER_TRACE, MODULE_SPAN, recorded

pytestmark = pytest.mark.timeout(180)


@dataclass(frozen=True)
class Span:
    name: str
    kind: str
    trace: str
    id: str
    parent: str | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    status: str


@dataclass
class Tree:
    spans: list[Span]
    lines: dict[str, Any]

    def named(self, name: str) -> list[Span]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str, **attributes: Any) -> Span:
        found = [s for s in self.named(name) if all(s.attributes.get(k) == v for k, v in attributes.items())]
        assert len(found) == 1, (name, attributes, [s.name for s in self.spans])
        return found[0]

    def parent_of(self, span: Span) -> Span:
        return next(s for s in self.spans if s.id == span.parent)

    def children(self, span: Span) -> list[Span]:
        return [s for s in self.spans if s.parent == span.id]


def record(*args: str) -> Tree:
    lines, spans = recorded(*args)
    return Tree([Span(**span) for span in spans], lines)


# -- the span tree of a call ------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_a_call_with_approval_progress_and_an_upstream_is_one_tree(era: str) -> None:
    tree = record("client", era)
    call = tree.one("call trace.relay", **{"apcore.call.outcome": "ok"})
    server = tree.parent_of(call)
    assert (server.name, server.kind) == ("tools/call trace.relay", "SERVER")
    assert server.attributes["mcp.protocol.version"] == era and server.attributes["gen_ai.tool.name"] == "trace.relay"
    assert server.attributes["network.transport"] == "tcp"
    client = tree.parent_of(server)  # the SDK client's span, handed over in the request's _meta
    assert (client.name, client.kind) == ("MCP send tools/call trace.relay", "CLIENT")
    assert call.attributes["gen_ai.operation.name"] == "execute_tool" and call.attributes["apcore.call.origin"] == "mcp"
    assert [(e["name"], e["mcp.progress"], e["mcp.progress.total"]) for e in call.events] == [
        ("progress", 1, 2),
        ("progress", 2, 2),
    ]
    assert tree.lines["PROGRESS"] == [1.0, 2.0]

    children = {span.name: span for span in tree.children(call)}
    approval = children["approval trace.relay"]
    assert approval.attributes["apcore.approval.status"] == "approved"
    module = children[MODULE_SPAN]  # the module's own span, made with the OpenTelemetry API in its code
    sent = tree.one("MCP send tools/call demo.echo")
    assert sent.parent == module.id and sent.kind == "CLIENT"
    upstream = tree.one("tools/call demo.echo")  # the upstream server's span: its parent came in _meta
    assert upstream.parent == sent.id and upstream.kind == "SERVER"
    [upstream_call] = tree.children(upstream)
    assert (upstream_call.name, upstream_call.attributes["apcore.call.outcome"]) == ("call demo.echo", "ok")

    traces = {span.trace for span in (client, server, call, approval, module, sent, upstream, upstream_call)}
    assert traces == {call.trace}
    assert tree.lines["RESULT"]["trace_id"] == call.trace  # apcore's Context.trace_id is the span's trace
    assert "Ada" in tree.lines["RESULT"]["echoed"]
    # No argument value in any span unless the operator opts in.
    assert not any(
        "Ada" in json.dumps(span.attributes) or "hunter2" in json.dumps(span.attributes) for span in tree.spans
    )
    if era == "2026-07-28":  # the first round asked; the retry carried the answer
        asked = tree.one("call trace.relay", **{"apcore.call.outcome": "input_required"})
        [first] = tree.children(asked)
        assert first.attributes["apcore.approval.status"] == "asked"
        assert asked.status == "UNSET"  # asking is not an error


def test_arguments_are_recorded_only_when_opted_in_and_redacted() -> None:
    tree = record("arguments")
    call = tree.one("call trace.relay", **{"apcore.call.outcome": "ok"})
    recorded = json.loads(call.attributes["gen_ai.tool.call.arguments"])
    assert recorded["text"] == "Ada"
    assert recorded["password"] != "hunter2" and "hunter2" not in json.dumps([s.attributes for s in tree.spans])


def test_a_traceparent_header_parents_the_server_span_and_reaches_the_upstream() -> None:
    tree = record("header")
    server = tree.one("tools/call up.demo_echo")
    assert (server.trace, server.parent) == (CALLER_TRACE, CALLER_SPAN)  # no _meta: the HTTP header
    [call] = tree.children(server)
    assert call.name == "call up.demo_echo" and call.attributes["apcore.call.outcome"] == "ok"
    sent = tree.one("MCP send tools/call demo.echo")
    assert sent.parent == call.id
    upstream = tree.one("tools/call demo.echo")
    assert upstream.parent == sent.id and upstream.trace == CALLER_TRACE


def test_the_explorers_door_takes_its_parent_from_the_header() -> None:
    tree = record("explorer")
    server = tree.one("tools/call up.demo_echo")
    assert (server.trace, server.parent) == (CALLER_TRACE, CALLER_SPAN)
    [call] = tree.children(server)
    assert (call.name, call.attributes["apcore.call.origin"]) == ("call up.demo_echo", "explorer")
    assert tree.one("tools/call demo.echo").trace == CALLER_TRACE


# -- OTEL_* -----------------------------------------------------------------------------------------


def test_exporter_names_follow_the_standard_variables() -> None:
    assert exporter_names({}) == ["otlp_proto_http"]  # the spec's default protocol is http/protobuf
    assert exporter_names({"OTEL_TRACES_EXPORTER": "otlp,console"}) == ["otlp_proto_http", "console"]
    assert exporter_names({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) == [
        "otlp_proto_grpc"
    ]
    assert exporter_names({"OTEL_TRACES_EXPORTER": "none"}) == []


def test_nothing_is_set_without_the_variables_or_when_disabled() -> None:
    assert configure_tracing({}) is None
    assert configure_tracing({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}) is None


SET_UP = textwrap.dedent(
    """
    import logging, sys
    if sys.argv[1] == "no-sdk":
        sys.modules["opentelemetry.sdk"] = None  # as if the tracing extra were not installed
    logging.basicConfig(level=logging.INFO)
    from opentelemetry import trace
    from apcore_mcp.run.telemetry import TracingConfigError, configure_tracing
    try:
        provider = configure_tracing(dict(arg.split("=", 1) for arg in sys.argv[2:]))
    except TracingConfigError as exc:
        print("ERROR", exc)
        raise SystemExit(0)
    print("SET", type(provider).__name__, type(trace.get_tracer_provider()).__name__)
    print("SDK", "opentelemetry.sdk.trace" in sys.modules)
    """
)


def set_up(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", SET_UP, *args], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def test_without_the_sdk_the_variables_get_a_warning_and_nothing_else() -> None:
    done = set_up("no-sdk", "OTEL_TRACES_EXPORTER=console")
    assert "SET NoneType ProxyTracerProvider" in done.stdout
    assert 'pip install "apcore-mcp[tracing]"' in done.stderr


def test_without_the_variables_the_sdk_is_not_imported() -> None:
    done = set_up("sdk")
    assert "SET NoneType ProxyTracerProvider" in done.stdout and "SDK False" in done.stdout


def test_an_unknown_exporter_is_a_clear_error() -> None:
    done = set_up("sdk", "OTEL_TRACES_EXPORTER=zipkin_json")
    assert "ERROR OTEL_TRACES_EXPORTER: no trace exporter 'zipkin_json' is installed" in done.stdout
    assert "console" in done.stdout and "otlp_proto_http" in done.stdout
    with pytest.raises(TracingConfigError):  # raised before any provider is set, so in this process too
        configure_tracing({"OTEL_TRACES_EXPORTER": "zipkin_json"})


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each export request with the OpenTelemetry protobufs."""

    spans: list[tuple[str, str, str, dict[str, Any]]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            for resource_spans in request.resource_spans:
                service = next(
                    a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"
                )
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        attributes = {a.key: a.value.string_value for a in span.attributes}
                        self.spans.append((service, span.name, span.trace_id.hex(), attributes))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    Receiver.spans = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()


def documented_command() -> tuple[dict[str, str], list[str]]:
    """The environment and command line of docs/tracing.md's OTLP example, as written."""
    page = (REPO / "docs" / "tracing.md").read_text()
    line = page.split("<!-- run by: tests/calls/test_traces.py -->\n```bash\n", 1)[1].split("\n```", 1)[0]
    words = shlex.split(line)
    assignments = list(itertools.takewhile(lambda word: "=" in word and not word.startswith("-"), words))
    return dict(word.split("=", 1) for word in assignments), words[len(assignments) :]


def test_the_documented_command_exports_to_an_otlp_endpoint(receiver: str) -> None:
    variables, argv = documented_command()
    assert argv[0] == "apcore-mcp" and variables["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].endswith("/v1/traces")
    port = free_port()
    env = {**os.environ, **variables, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    command = [str(Path(sys.executable).parent / "apcore-mcp"), *argv[1:], "--port", str(port)]
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    stderr = ""
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc)
        listed = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}},
            headers={**modern_headers("tools/list"), "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
            timeout=30,
        )
        assert listed.status_code == 200, listed.text
    finally:
        stop_process(proc)  # SIGTERM: a graceful stop; the provider flushes its queue at exit
        if proc.stderr is not None:
            stderr = proc.stderr.read()
            proc.stderr.close()
    service = variables["OTEL_SERVICE_NAME"]
    assert (service, "tools/list", CALLER_TRACE) in {(s, n, t) for s, n, t, _ in Receiver.spans}, stderr
    assert "Exporting traces to otlp_proto_http" in stderr
