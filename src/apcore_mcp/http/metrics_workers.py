"""One ``/metrics`` answer for several worker processes: their expositions added up.

A scrape reaches whichever worker the kernel hands the connection to, so each worker answers for
the machine: it adds its own exposition to the latest one of each other worker (published to the
workers' store, ``replicas/machine``). Counters, histograms and gauges of things each worker has
its own of (calls in flight, sessions, streams) add up; a gauge every worker reports the same
value of (``SAME_ON_EVERY_WORKER``: the tools served) is taken once, as its largest; a
``_created`` timestamp is the earliest.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence

import anyio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from apcore_mcp.bridge.workers import machine_directory
from apcore_mcp.http.metrics import Metrics
from apcore_mcp.replicas.machine.metrics import PUBLISH_SECONDS, MachineMetrics
from apcore_mcp.replicas.machine.store import MachineStore

SAME_ON_EVERY_WORKER = frozenset({"apcore_mcp_registered_tools"})

_Key = tuple[str, tuple[tuple[str, str], ...]]


def merge_expositions(texts: Sequence[bytes], same: frozenset[str] = SAME_ON_EVERY_WORKER) -> bytes:
    """The exposition of all ``texts`` together (Prometheus text format in, the same out)."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[_Key, float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text.decode("utf-8")):
            kept = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            samples = values.setdefault(kept.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                samples[key] = _combined(samples.get(key), sample.value, sample.name, family.name in same)
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


def _combined(previous: float | None, value: float, sample: str, same: bool) -> float:
    if previous is None:
        return value
    if sample.endswith("_created"):
        return min(previous, value)
    return max(previous, value) if same else previous + value


class _Fixed:
    """A collector yielding metric families already built."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterator[Metric]:
        yield from self.families


@contextlib.asynccontextmanager
async def machine_metrics(metrics: Metrics) -> AsyncIterator[None]:
    """While inside, ``metrics`` answers for every worker, and publishes its own part every
    ``PUBLISH_SECONDS`` for the others (withdrawn at the end: a stopped worker leaves the sum)."""
    store = MachineStore.open(machine_directory())
    machine = MachineMetrics(store)
    metrics.render_all = lambda own: merge_expositions(machine.everyone(own))
    try:
        async with anyio.create_task_group() as publishing:
            publishing.start_soon(_publish, metrics, machine)
            try:
                yield
            finally:
                publishing.cancel_scope.cancel()
    finally:
        metrics.render_all = None
        machine.withdraw()
        store.close()


async def _publish(metrics: Metrics, machine: MachineMetrics) -> None:
    while True:
        machine.publish(generate_latest(metrics.registry))
        await anyio.sleep(PUBLISH_SECONDS)
