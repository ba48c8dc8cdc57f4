"""Approvals from several processes at once (the workers' explorer, ``pins approve``): none is lost."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from apcore_mcp.upstream.pins.gate import Live, approve
from apcore_mcp.upstream.pins.store import Pin, read_pins, write_pins

ROUNDS = 40


def _approve_many(path: str, tool: str) -> None:
    for round_number in range(ROUNDS):
        name = f"{tool}{round_number}"
        live = Live(pins={"up": {name: Pin(f"{round_number:064x}", {"name": name})}})
        approve(Path(path), live, [f"up.{name}"])


def test_two_processes_approving_at_once_keep_every_approval(tmp_path: Path) -> None:
    path = tmp_path / "mcp.pins.json"
    write_pins(path, {"up": {}})
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_approve_many, args=(str(path), tool)) for tool in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
        if writer.is_alive():  # bounded: never left behind
            writer.kill()
    assert [writer.exitcode for writer in writers] == [0, 0]
    kept = set(read_pins(path)["up"])
    assert kept == {f"{tool}{n}" for tool in ("a", "b") for n in range(ROUNDS)}
