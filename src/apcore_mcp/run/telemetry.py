"""Exporting traces as the standard ``OTEL_*`` variables say, for the processes we start (``serve()``, the app factory).

``configure_tracing(environ)`` sets a tracer provider only when all of these hold:

1. No provider is set yet: one installed by the application or by ``opentelemetry-instrument``
   is theirs, and left alone.
2. ``OTEL_SDK_DISABLED`` is not ``true``, and the environment asks for traces:
   ``OTEL_TRACES_EXPORTER``, or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``,
   ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, whose default exporter is ``otlp``).
3. The OpenTelemetry SDK is installed (``pip install "apcore-mcp[tracing]"``); without it the
   variables get one WARNING saying so, and nothing else changes (the SDK is never imported).

Exporters are found by name in the ``opentelemetry_traces_exporter`` entry points, as the SDK's
own auto-configuration finds them: ``otlp`` is ``otlp_proto_http`` (or ``otlp_proto_grpc``
under ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL=grpc``), ``console`` writes to stderr (stdout is
the stdio transport's), ``none`` exports nothing. The exporters read their own ``OTEL_EXPORTER_*``
variables; the provider reads ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER`` and the batch processor's ``OTEL_BSP_*``. The provider flushes its
spans at interpreter exit.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import trace

logger = logging.getLogger(__name__)

EXPORTER_GROUP = "opentelemetry_traces_exporter"
DEFAULT_SERVICE_NAME = "apcore-mcp"
_ASKING = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class TracingConfigError(ValueError):
    """``OTEL_TRACES_EXPORTER`` names an exporter that is not installed."""


def configure_tracing(environ: Mapping[str, str]) -> Any | None:
    """The tracer provider set from ``environ`` (an SDK ``TracerProvider``); ``None`` when none was set.

    Raises:
        TracingConfigError: an exporter named in ``OTEL_TRACES_EXPORTER`` is not installed.
    """
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return None
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if not any(environ.get(name, "").strip() for name in _ASKING):
        return None
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning(
            "OTEL_* variables ask for traces but the OpenTelemetry SDK is not installed: "
            'pip install "apcore-mcp[tracing]" (no traces are exported)'
        )
        return None
    exporters = [_exporter(name, environ) for name in exporter_names(environ)]
    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: DEFAULT_SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(attributes))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    logger.info("Exporting traces to %s", ", ".join(exporter_names(environ)) or "nothing (none)")
    return provider


def exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The entry point names of ``OTEL_TRACES_EXPORTER`` (default ``otlp``), ``none`` dropped."""
    raw = environ.get("OTEL_TRACES_EXPORTER", "").strip() or "otlp"
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    otlp = "otlp_proto_grpc" if protocol.strip().lower() == "grpc" else "otlp_proto_http"
    return [otlp if name == "otlp" else name for name in names if name != "none"]


def _exporter(name: str, environ: Mapping[str, str]) -> Any:
    if name == "console":  # the SDK's prints to stdout, which the stdio transport speaks on
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    found = entry_points(group=EXPORTER_GROUP, name=name)
    if not found:
        known = sorted({point.name for point in entry_points(group=EXPORTER_GROUP)} | {"otlp", "none"})
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER: no trace exporter {name!r} is installed (installed: {', '.join(known)}); "
            'the OTLP/HTTP one comes with pip install "apcore-mcp[tracing]"'
        )
    return next(iter(found)).load()()
