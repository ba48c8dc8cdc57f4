"""What ``Bridge.build`` hands each part is what the part keeps: nothing is re-pointed after it.

A toolset endpoint's bridge shares its server's observers (the metrics, ``serve()``'s collector)
by being built with ``observed_with``; the task runner is the bridge's, built with it, running
its calls through the bridge's router.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.modules import make_executor

SOURCE = Path(__file__).resolve().parents[2] / "src" / "apcore_mcp"


@pytest.mark.parametrize("tool_mode", ["list", "search"])
def test_a_bridge_built_with_another_shares_its_observers_from_the_start(tool_mode: str) -> None:
    main = Bridge.build(make_executor(), Settings())
    toolset = Bridge.build(make_executor(), Settings(tool_mode=tool_mode), observed_with=main)
    assert toolset.router.observers is main.router.observers
    assert toolset.parts.admission.observers is main.parts.admission.observers
    alone = Bridge.build(make_executor(), Settings(tool_mode=tool_mode))
    assert alone.router.observers is not main.router.observers
    assert alone.parts.admission.observers is not main.parts.admission.observers


def test_the_task_runner_is_the_bridges_and_calls_through_its_router() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    assert bridge.tasks.router is bridge.router
    assert not hasattr(bridge.parts, "tasks")


def test_the_notifier_tells_the_subscriptions_the_handlers_record() -> None:
    bridge = Bridge.build(make_executor(), Settings())
    assert bridge.notifier.subscriptions is bridge.parts.subscriptions


PARTS = {"router", "parts", "catalog", "tasks", "notifier"}


def _part_of(target: ast.expr) -> bool:
    """``x.router.observers``, ``bridge.parts.y`` or ``notifier.subscriptions``: a part's field."""
    if not isinstance(target, ast.Attribute):
        return False
    owner = target.value
    return (isinstance(owner, ast.Attribute) and owner.attr in PARTS) or (
        isinstance(owner, ast.Name) and owner.id in PARTS
    )


def test_no_module_assigns_a_part_of_a_built_bridge() -> None:
    """Assigning a part's field anywhere in the package, in ``build`` or after it: a re-pointing."""
    found: list[str] = []
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                found += [f"{path.relative_to(SOURCE)}:{node.lineno}" for target in node.targets if _part_of(target)]
    assert found == []
