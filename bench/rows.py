"""What every workload shares: the run's configuration, the result row, reference helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    REF_PYTHON,
    ServerSpec,
    run_json,
    server_specs,
)
from bench.modules import make_extensions

REF_SCRIPT = Path(__file__).resolve().parent / "ref_inproc.py"
OURS = "ours"
BARE = "bare+executor"
BARE_DIRECT = "bare-no-executor"
REF = "reference-0.23.3"
FLOOR = "apcore get_definition alone"


@dataclass
class Config:
    """Sizes and durations of one run."""

    workdir: Path
    sizes: Sequence[int] = (100, 1000)
    include_reference: bool = True
    reps: int = 3
    calls: int = 1000
    roundtrip_calls: int = 300
    duration: float = 5.0
    load_grace: float = 2.5  # seconds the load processes get to start and connect before the clock runs
    soak_seconds: float | None = None  # None: max(60, 36 x duration) (bench.soak)
    throughput_rounds: int = 5
    client_counts: Sequence[int] = (1, 10, 50)
    transports: Sequence[str] = ("streamable-http", "streamable-http-2026", "sse")  # bench.throughput.ROUTES
    servers: Sequence[str] | None = None  # None: all
    startup_reps: int = 3
    call_timeout: float = 10.0
    upstream_calls: int = 1000
    upstream_rounds: int = 5
    search_sizes: Sequence[int] = (1000, 10_000)
    search_calls: int = 400
    log: Path | None = None
    # capacity (bench.capacity): wrk rounds of whole seconds, keep-alive connection counts, servers
    capacity_rounds: int = 3
    capacity_seconds: int = 5
    capacity_connections: Sequence[int] = (10,)
    capacity_servers: Sequence[str] | None = None  # None: all of bench.capacity_servers.SERVERS
    # workers (bench.workers): interleaved rounds, seconds of each wrk run, servers (None: ours and FastMCP)
    workers_rounds: int = 3
    workers_seconds: int = 3
    workers_servers: Sequence[str] | None = None
    _dirs: dict[int, Path] = field(default_factory=dict)

    def extensions(self, n: int) -> Path:
        """The extensions dir with ``n`` modules (plus ``bench.echo``), made once per run."""
        if n not in self._dirs:
            self._dirs[n] = make_extensions(self.workdir / f"ext{n}", n)
        return self._dirs[n]

    @property
    def small(self) -> int:
        return min(self.sizes)

    def specs(self) -> list[ServerSpec]:
        specs = server_specs(self.extensions(self.small), include_reference=self.include_reference)
        return [s for s in specs if self.servers is None or s.name in self.servers]


def row(
    workload: str,
    metric: str,
    unit: str,
    ours: float | None,
    refs: dict[str, float | None] | None = None,
    *,
    target: str | None = None,
    met: bool | None = None,
    details: dict[str, Any] | None = None,
    spread: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """One table row: our figure, the references' figures from the same run, ours/ref ratios.

    ``spread`` gives, per server (``ours`` or a reference's name), the lowest and highest value
    over the rounds the figure is the median of.
    """
    refs = refs or {}
    ratios = {
        name: (ours / value if ours is not None and value not in (None, 0) else None) for name, value in refs.items()
    }
    return {
        "workload": workload,
        "metric": metric,
        "unit": unit,
        "ours": ours,
        "references": refs,
        "ratio": ratios,
        "target": target,
        "met": met,
        "details": details or {},
        "spread": spread or {},
    }


def ref_json(cfg: Config, what: str, directory: Path, arg: int | None = None, timeout: float = 600) -> Any:
    cmd = [str(REF_PYTHON), str(REF_SCRIPT), what, str(directory)]
    if arg is not None:
        cmd.append(str(arg))
    return run_json(cmd, timeout=timeout)


def guard(cfg: Config, fn: Callable[[], Any]) -> Any:
    """Run a reference measurement; a failure is reported, not fatal."""
    if not cfg.include_reference:
        return None
    try:
        return fn()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[-300:]}"}


def figure(result: Any, key: str) -> float | None:
    return result.get(key) if isinstance(result, dict) else None
