"""Where a ``tools/call`` spends its time on the server: cProfile of a whole MCP call, by layer.

    python -m bench.profile --transport streamable-http --era legacy --clients 10 --duration 10
    python -m bench.profile --transport streamable-http --era modern
    python -m bench.profile --transport sse
    python -m bench.profile --transport memory --era legacy --calls 3000
    python -m bench.profile --server bare+executor        # the same for a bare SDK server
    python -m bench.profile --show server.prof --calls N  # re-read a saved profile

Over HTTP the server runs under ``bench.profiled`` (cProfile of the event-loop thread, switched on
for the load window only) with ``bench.load`` processes calling ``bench.echo``. In memory, client
and server share the process (``mcp.Client(server)``), so the layer shares include the client;
the per-call figures of server-side entries are the server's alone.

Printed: each layer's share of the profiled time (a C function's time goes to the layer that
called it), the cumulative time per call of the entries a call passes through, the top
functions by own time, and ours (``apcore_mcp``) by own time. cProfile adds a fixed cost per
Python call, so shares lean towards code made of many small calls: compare runs, not absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, Func, ServerSpec, profile_table, running_server, server_specs, stop_process
from bench.modules import ECHO_ID, make_extensions
from bench.profiled import ENV_SWITCH
from bench.throughput import load_layout

LAYERS: tuple[tuple[str, str], ...] = (
    ("/apcore_mcp/", "apcore-mcp (ours)"),
    ("/bench/", "bench (bare server / client loop)"),
    ("/apcore/", "apcore Executor"),
    ("/mcp/client/", "MCP client (in memory only)"),
    ("/mcp/", "MCP SDK"),
    ("/mcp_types/", "MCP SDK"),
    ("/sse_starlette/", "HTTP stack (uvicorn, h11, starlette, sse-starlette)"),
    ("/starlette/", "HTTP stack (uvicorn, h11, starlette, sse-starlette)"),
    ("/uvicorn/", "HTTP stack (uvicorn, h11, starlette, sse-starlette)"),
    ("/h11/", "HTTP stack (uvicorn, h11, starlette, sse-starlette)"),
    ("/pydantic", "pydantic"),
    ("/anyio/", "anyio + asyncio event loop"),
    ("/asyncio/", "anyio + asyncio event loop"),
    ("/selectors.py", "anyio + asyncio event loop"),
    ("/prometheus_client/", "prometheus_client"),
    ("/opentelemetry/", "opentelemetry (SDK spans)"),
)
OTHER = "stdlib and other"

# Entries a tools/call passes through, outermost first (cumulative time per call): file, function
# name as cProfile records it (no class), label.
ENTRIES: tuple[tuple[str, str, str], ...] = (
    ("starlette/applications.py", "__call__", "Starlette app"),
    ("apcore_mcp/http/guard.py", "__call__", "HostOriginGuard"),
    ("apcore_mcp/http/metrics.py", "__call__", "StreamCounter"),
    ("mcp/server/streamable_http_manager.py", "__call__", "StreamableHTTPASGIApp"),
    ("mcp/server/streamable_http.py", "_handle_post_request", "handshake-era POST"),
    ("mcp/server/_streamable_http_modern.py", "handle_modern_request", "2026-07-28 POST"),
    ("mcp/server/sse.py", "handle_post_message", "SSE POST"),
    ("sse_starlette/sse.py", "__call__", "EventSourceResponse"),
    ("mcp/shared/jsonrpc_dispatcher.py", "_handle_request", "JSON-RPC dispatcher"),
    ("mcp/server/runner.py", "_on_request", "ServerRunner._on_request"),
    ("mcp_types/methods.py", "validate_client_request", "SDK request validation"),
    ("mcp/server/_otel.py", "__call__", "SDK OpenTelemetry middleware"),
    ("apcore_mcp/mcp/access.py", "__call__", "ToolAccess middleware"),
    ("apcore_mcp/mcp/notifier.py", "__call__", "ListChangedNotifier middleware"),
    ("mcp/server/request_state.py", "__call__", "RequestStateBoundary middleware"),
    ("apcore_mcp/mcp/tools.py", "__call__", "ToolListCache middleware"),
    ("mcp/server/runner.py", "_inner", "SDK handler call (params, handler, result)"),
    ("apcore_mcp/mcp/tools.py", "call_tool", "our tools/call handler"),
    ("apcore_mcp/mcp/access.py", "refusal", "tool scope check"),
    ("apcore_mcp/mcp/edge.py", "call_context", "CallContext from the request"),
    ("apcore_mcp/calls.py", "call", "CallRouter.call"),
    ("apcore_mcp/context.py", "to_apcore", "apcore Context"),
    ("apcore/executor.py", "call_async", "Executor.call_async"),
    ("apcore/pipeline.py", "run", "apcore PipelineEngine.run"),
    ("apcore_mcp/calls.py", "success_outcome", "rendering the output"),
    ("apcore_mcp/mcp/results.py", "call_result", "the result dict"),
    ("apcore_mcp/http/metrics.py", "observe_call", "metrics"),
    ("mcp/server/runner.py", "_serialize", "SDK result validation"),
    ("bench/bare_server.py", "call_tool", "bare server handler"),
)


def layer_of(path: str) -> str:
    for marker, layer in LAYERS:
        if marker in path:
            return layer
    return OTHER


def _is_builtin(func: Func) -> bool:
    return func[0] == "~"


def layer_times(stats: dict[Func, Any]) -> dict[str, float]:
    """Own time per layer; a C function's own time is shared out to its callers' layers."""
    times: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tt, _ct, callers) in stats.items():
        if not _is_builtin(func):
            times[layer_of(func[0])] += tt
            continue
        by_caller = {caller: entry[2] for caller, entry in callers.items() if not _is_builtin(caller)}
        total = sum(by_caller.values())
        if not total:
            times[OTHER] += tt
            continue
        for caller, share in by_caller.items():
            times[layer_of(caller[0])] += tt * share / total
    return dict(times)


def _label(func: Func) -> str:
    path, line, name = func
    if path == "~":
        return name
    for root in ("site-packages/", "/src/", "/lib/python3.11/", str(REPO_ROOT) + "/"):
        if root in path:
            path = path.split(root, 1)[1]
            break
    return f"{path}:{line}({name})"


def entry_times(stats: dict[Func, Any], calls: int) -> list[tuple[str, float]]:
    """Cumulative microseconds per call of the ``ENTRIES`` found (a coroutine only while it runs)."""
    found = []
    for suffix, name, label in ENTRIES:
        total = sum(entry[3] for func, entry in stats.items() if func[2] == name and func[0].endswith(suffix))
        if total:
            found.append((f"{label} ({suffix}:{name})", total / calls * 1e6))
    return found


def _is_idle(func: Func) -> bool:
    """The event loop waiting for I/O: idle time, not work (cProfile measures wall time)."""
    return func[0] == "~" and func[2] == "<method 'poll' of 'select.epoll' objects>"


def summarize(stats: pstats.Stats, calls: int, top: int = 25) -> dict[str, Any]:
    everything = profile_table(stats)
    raw = {func: entry for func, entry in everything.items() if not _is_idle(func)}
    total = sum(entry[2] for entry in raw.values())
    calls = max(calls, 1)
    layers = layer_times(raw)
    by_own = sorted(raw.items(), key=lambda item: -item[1][2])
    ours = [item for item in by_own if "/apcore_mcp/" in item[0][0]]
    return {
        "calls": calls,
        "profiled_us_per_call": total / calls * 1e6,
        # Python function calls (coroutine resumptions included) per request: a count, free of timing noise.
        "function_calls_per_call": sum(entry[1] for entry in raw.values()) / calls,
        "ours_function_calls_per_call": sum(e[1] for f, e in raw.items() if "/apcore_mcp/" in f[0]) / calls,
        "layers_pct": {k: 100 * v / total for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
        "layers_us_per_call": {k: v / calls * 1e6 for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
        "entries_us_per_call": entry_times(raw, calls),
        "top": [(_label(f), e[1], e[2] / calls * 1e6, 100 * e[2] / total) for f, e in by_own[:top]],
        "ours": [(_label(f), e[1], e[2] / calls * 1e6, 100 * e[2] / total) for f, e in ours[:top]],
    }


def render(summary: dict[str, Any]) -> str:
    lines = [
        f"{summary['calls']} calls; profiled time {summary['profiled_us_per_call']:.0f} us per call "
        "(cProfile inflates it; the event loop's waits in epoll left out)",
        f"Python function calls per call: {summary['function_calls_per_call']:.0f}, "
        f"of which in apcore_mcp: {summary['ours_function_calls_per_call']:.0f}; "
        f"errors/lost/misrouted replies: {summary.get('faults', 0)}",
        "",
        "layer                                                  share   us/call",
    ]
    for layer, pct in summary["layers_pct"].items():
        lines.append(f"  {layer:<52} {pct:5.1f}%  {summary['layers_us_per_call'][layer]:7.1f}")
    lines += ["", "cumulative per call (us), outermost first:"]
    lines += [f"  {us:8.1f}  {name}" for name, us in summary["entries_us_per_call"]]
    for title, key in (("top functions by own time", "top"), ("ours (apcore_mcp) by own time", "ours")):
        lines += ["", f"{title}:  us/call   share   calls  function"]
        lines += [f"  {us:8.2f}  {pct:5.1f}%  {n:6d}  {label}" for label, n, us, pct in summary[key]]
    return "\n".join(lines)


# -- over HTTP: the server under bench.profiled, load from bench.load processes ------------------------


def profiled_spec(name: str, extensions: Path, out: Path, extra: list[str], clock: str) -> ServerSpec:
    spec = next(s for s in server_specs(extensions, include_reference=False) if s.name == name)
    env = {**spec.env, ENV_SWITCH: "cpu" if clock == "cpu" else "1"}
    return ServerSpec(spec.name, spec.python, ["-m", "bench.profiled", str(out), *spec.args, *extra], env)


def _spawn_load(url: str, transport: str, era: str, clients: int, start_at: float, duration: float) -> list[Any]:
    common = ["--url", url, "--transport", "sse" if transport == "sse" else "http", "--era", era]
    window = ["--start-at", str(start_at), "--duration", str(duration)]
    return [
        subprocess.Popen(
            [sys.executable, "-m", "bench.load", *common, "--clients", str(k), *window, "--proc", str(i)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        for i, k in enumerate(load_layout(clients))
    ]


def profile_http(args: argparse.Namespace, extensions: Path, out: Path) -> tuple[int, int]:
    """Profile the server during one load window: ``(replies in the window, faults seen)``.

    The profile covers the same window as the load processes' count of replies (signals sent at
    its start and end), so figures per call divide by that count.
    """
    spec = profiled_spec(args.server, extensions, out, args.server_args.split(), args.clock)
    with running_server(spec, args.transport) as (pid, port):
        start_at = time.time() + 2.5 + 0.04 * args.clients
        procs = _spawn_load(f"http://127.0.0.1:{port}", args.transport, args.era, args.clients, start_at, args.duration)
        try:
            time.sleep(max(0.0, start_at - time.time()))
            os.kill(pid, signal.SIGUSR1)
            time.sleep(max(0.0, start_at + args.duration - time.time()))
            os.kill(pid, signal.SIGUSR2)
            results = [json.loads(p.communicate(timeout=60)[0].decode().strip().splitlines()[-1]) for p in procs]
        finally:
            for proc in procs:
                stop_process(proc, timeout=5)
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    if not out.exists():
        raise RuntimeError("the server wrote no profile")
    faults = sum(int(r["errors"] + r["lost"] + r["misrouted"] + r["connect_failures"]) for r in results)
    return sum(int(r["ok"]) for r in results), faults


# -- in memory: client and server in this process --------------------------------------------------------


def profile_memory(args: argparse.Namespace, extensions: Path, out: Path) -> tuple[int, int]:
    from mcp import Client
    from mcp.server import Server

    from apcore_mcp.bridge import Bridge
    from apcore_mcp.settings import Settings
    from bench.bare_server import build_bare_server
    from bench.inproc import discover

    registry = discover(extensions)
    bridge = Bridge.build(registry, Settings()) if args.server == "ours" else None
    server: Server[Any] = (
        bridge.server
        if bridge is not None
        else build_bare_server(registry, use_executor=args.server == "bare+executor")
    )
    prof = cProfile.Profile(time.thread_time) if args.clock == "cpu" else cProfile.Profile()

    async def run() -> None:
        async with Client(server, mode="auto" if args.era == "modern" else "legacy", cache=None) as client:
            for i in range(200):  # warm-up: first-call work stays out of the profile
                await client.call_tool(ECHO_ID, {"text": f"w{i}"})
            prof.enable()
            for i in range(args.calls):
                await client.call_tool(ECHO_ID, {"text": f"p{i}"})
            prof.disable()

    asyncio.run(run())
    prof.dump_stats(str(out))
    return int(args.calls), 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--transport", choices=["streamable-http", "sse", "memory"], default="streamable-http")
    parser.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    parser.add_argument("--server", choices=["ours", "bare+executor", "bare-no-executor"], default="ours")
    parser.add_argument("--server-args", default="", help="more command-line arguments for the server (HTTP)")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load profiled (HTTP)")
    parser.add_argument("--calls", type=int, default=3000, help="calls profiled (memory; the count for --show)")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall: cheap, but counts preemption on a busy machine; cpu: the thread's CPU time, dearer per call",
    )
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--save", type=Path, help="keep the raw profile (pstats format) here")
    parser.add_argument("--show", type=Path, help="summarize a saved profile instead of running one")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def profile(args: argparse.Namespace) -> dict[str, Any]:
    """Run (or re-read) one profile and summarize it."""
    if args.transport == "sse" and args.era == "modern":
        raise ValueError("SSE has no 2026-07-28 era")
    with tempfile.TemporaryDirectory(prefix="apcore-mcp-profile-") as tmp:
        calls, faults = args.calls, 0
        if args.show is not None:
            out = args.show
        else:
            extensions = make_extensions(Path(tmp) / "ext", 10)
            out = args.save or Path(tmp) / "server.prof"
            out.unlink(missing_ok=True)
            calls, faults = (profile_memory if args.transport == "memory" else profile_http)(args, extensions, out)
        summary = summarize(pstats.Stats(str(out)), calls, args.top)
    summary["faults"] = faults
    summary["run"] = {k: str(v) for k, v in vars(args).items()}
    return summary


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    summary = profile(args)
    print(json.dumps(summary, indent=1) if args.json else render(summary))


if __name__ == "__main__":
    main()
