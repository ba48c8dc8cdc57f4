"""The benchmark module set, written as an apcore extensions directory.

``make_extensions(root, n)`` writes ``root/bench/m000.py`` ... (10-property input models with
mixed types and one nested model, an output model, a trivial ``execute``) and
``root/bench/echo.py`` (one string field, echoed back) used by every call workload.
Module ids: ``bench.m000`` ... and ``bench.echo``. ``add_cpu_module(root)`` adds ``bench.cpu5ms``
(the workers workload's CPU-bound sync module) to such a directory.
"""

from __future__ import annotations

from pathlib import Path

ECHO_ID = "bench.echo"
CPU_ID = "bench.cpu5ms"
CPU_MS = 5

MODULE_TEMPLATE = '''\
from typing import Literal

from pydantic import BaseModel, Field


class Address{i}(BaseModel):
    street: str
    city: str = "Paris"
    zip_code: str | None = None


class Input{i}(BaseModel):
    name: str = Field(description="a name")
    count: int = Field(default=1, ge=0, le=1000)
    ratio: float = 0.5
    enabled: bool = True
    tags: list[str] = Field(default_factory=list)
    mode: str = Field(default="fast", pattern="^(fast|slow)$")
    limit: int | None = None
    priority: Literal["low", "high"] = "low"
    scores: list[float] = Field(default_factory=list)
    address: Address{i}


class Output{i}(BaseModel):
    name: str
    count: int


class Module{i}:
    """Benchmark module {i}."""

    description = "Benchmark module {i}: takes ten mixed properties and returns two."
    input_schema = Input{i}
    output_schema = Output{i}
    tags = ["bench"]

    def execute(self, inputs, context):
        return {{"name": inputs.get("name", ""), "count": inputs.get("count", 1)}}
'''

ECHO_SOURCE = '''\
from pydantic import BaseModel


class EchoInput(BaseModel):
    text: str


class EchoOutput(BaseModel):
    text: str


class Echo:
    """Returns its input."""

    description = "Echo the text back."
    input_schema = EchoInput
    output_schema = EchoOutput

    async def execute(self, inputs, context):
        return {"text": inputs["text"]}
'''


# A sync module spending CPU_MS of its own thread's CPU time in Python bytecode, then echoing like
# bench.echo: the GIL lets one process run one such call at a time, whatever its thread pool. Timed
# by thread_time, not a fixed loop count, so a call costs the same CPU on any machine.
CPU_SOURCE = f'''\
import time

from pydantic import BaseModel


class CpuInput(BaseModel):
    text: str


class CpuOutput(BaseModel):
    text: str


class Cpu5ms:
    """Spends {CPU_MS} ms of CPU in pure Python, then returns its input."""

    description = "Spend {CPU_MS} ms of CPU, then echo the text."
    input_schema = CpuInput
    output_schema = CpuOutput

    def execute(self, inputs, context):
        deadline = time.thread_time() + {CPU_MS / 1000}
        spins = 0
        while time.thread_time() < deadline:
            spins += 1
        return {{"text": inputs["text"]}}
'''


def add_cpu_module(root: Path) -> Path:
    """Write ``bench.cpu5ms`` under ``root`` (created); return ``root``."""
    package = root / "bench"
    package.mkdir(parents=True, exist_ok=True)
    (package / "cpu5ms.py").write_text(CPU_SOURCE)
    return root


def make_extensions(root: Path, n: int) -> Path:
    """Write ``n`` modules plus ``bench.echo`` under ``root`` (created); return ``root``."""
    package = root / "bench"
    package.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (package / f"m{i:03d}.py").write_text(MODULE_TEMPLATE.format(i=i))
    (package / "echo.py").write_text(ECHO_SOURCE)
    return root


def module_count(root: Path) -> int:
    """How many modules (``echo`` included) ``root`` holds."""
    return len(list((root / "bench").glob("*.py")))
