"""Bench-only entry point: run a server module under cProfile, switched on and off by signals.

    python -m bench.profiled OUT.prof -m apcore_mcp --transport streamable-http ...
    python -m bench.profiled OUT.prof -m bench.bare_server --mode executor ...

``SIGUSR1`` starts a fresh profile of the main thread (where the event loop runs), ``SIGUSR2``
stops it and writes it to ``OUT.prof`` (``pstats`` format), so the measurement window excludes
start-up and the clients' connects. With ``BENCH_PROFILE=0`` in the environment the
signals are ignored and the server runs unprofiled (the same process, for an A/B of the overhead);
with ``BENCH_PROFILE=cpu`` the profile measures the thread's CPU time instead of wall
time (immune to the process being preempted on a busy machine, but each call event costs a
system call, which inflates code made of many small calls further).
Nothing here is imported by the package.
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
import time
from types import FrameType

ENV_SWITCH = "BENCH_PROFILE"  # not APCORE_MCP_*: the server refuses settings it does not know


class SignalProfiler:
    """One cProfile of the main thread, started by SIGUSR1 and dumped by SIGUSR2."""

    def __init__(self, out: str, *, cpu_clock: bool = False) -> None:
        self.out = out
        self.cpu_clock = cpu_clock
        self.profile: cProfile.Profile | None = None

    def start(self, _sig: int, _frame: FrameType | None) -> None:
        self.profile = cProfile.Profile(time.thread_time) if self.cpu_clock else cProfile.Profile()
        self.profile.enable()

    def stop(self, _sig: int, _frame: FrameType | None) -> None:
        if self.profile is None:
            return
        self.profile.disable()
        tmp = f"{self.out}.tmp"
        self.profile.dump_stats(tmp)
        os.replace(tmp, self.out)  # the driver waits for OUT to appear: never show it half written
        self.profile = None


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "-m":
        raise SystemExit("usage: python -m bench.profiled OUT.prof -m MODULE [ARGS...]")
    out, module = argv[0], argv[2]
    switch = os.environ.get(ENV_SWITCH, "1")
    if switch != "0":
        profiler = SignalProfiler(out, cpu_clock=switch == "cpu")
        signal.signal(signal.SIGUSR1, profiler.start)
        signal.signal(signal.SIGUSR2, profiler.stop)
    sys.argv = [module, *argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
