"""The SDK's span per request: skipped without a tracer provider, recorded as before with one.

The provider is process-global and set once, so the configured case runs in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from mcp import Client

from apcore_mcp._sdk import is_sdk_tracing
from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.mcp.tracing import TracedWhenConfigured
from apcore_mcp.settings import Settings

from tests._support.modules import make_executor
from tests._support.sessions import REPO

TRACED_CALL = textwrap.dedent(
    """
    import anyio
    from mcp import Client
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from apcore_mcp.bridge import Bridge, BridgeService
    from apcore_mcp.settings import Settings
    from tests._support.modules import make_executor

    async def main() -> None:
        bridge = Bridge.build(make_executor(), Settings())  # built before the provider is set
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        async with BridgeService(bridge), Client(bridge.server) as client:
            await client.call_tool("demo.echo", {"text": "Ada"})
        for span in exporter.get_finished_spans():
            print(span.name, span.attributes.get("gen_ai.tool.name"))

    anyio.run(main)
    """
)


def test_the_sdk_span_middleware_is_wrapped() -> None:
    server = Bridge.build(make_executor(), Settings()).server
    assert not any(is_sdk_tracing(layer) for layer in server.middleware)
    wrapped = [layer for layer in server.middleware if isinstance(layer, TracedWhenConfigured)]
    assert len(wrapped) == 1 and is_sdk_tracing(wrapped[0].inner)


async def test_without_a_provider_no_span_is_started() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    started: list[object] = []
    layer = next(layer for layer in bridge.server.middleware if isinstance(layer, TracedWhenConfigured))
    inner = layer.inner

    async def counting(ctx: object, call_next: object) -> object:
        started.append(ctx)
        return await inner(ctx, call_next)  # type: ignore[arg-type]

    layer.inner = counting  # type: ignore[assignment]
    async with BridgeService(bridge), Client(bridge.server) as client:
        result = await client.call_tool("demo.echo", {"text": "Ada"})
    assert not result.is_error
    assert started == []


def test_a_provider_set_after_build_records_the_call_span() -> None:
    done = subprocess.run(
        [sys.executable, "-c", TRACED_CALL], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "tools/call demo.echo demo.echo" in done.stdout.splitlines(), done.stdout
