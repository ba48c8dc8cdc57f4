"""The skills a server offers now: generated from the tool catalog, rebuilt when it changes.

``SkillCatalog.current()`` is what every route reads. The generated skills are remade only
when the tool catalog's ``generation`` moved (a module came or went), so a listing costs a
lookup; hand-written skills are read once, at build, and win over generated ones of a name.
``relayed`` (upstream servers' skills, ``upstream/skills.py``) is asked on each rebuild and
when its own generation moves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.skills.directory import with_hand_written
from apcore_mcp.tools.skills.generate import GroupBy, generate_skills
from apcore_mcp.tools.skills.model import Skill, SkillSet


class SkillCatalog:
    """The current ``SkillSet`` over a ``ToolCatalog``; thread-safe, rebuilt lazily on change."""

    def __init__(
        self,
        catalog: ToolCatalog,
        *,
        group_by: GroupBy = "prefix",
        written: Sequence[Skill] = (),
        runs_long: Callable[[ToolRecord], bool] = lambda _record: False,
        relayed: Callable[[], Iterable[Skill]] | None = None,
        relayed_generation: Callable[[], int] = lambda: 0,
        note: str = "",
    ) -> None:
        self._catalog = catalog
        self._group_by = group_by
        self._written = tuple(written)
        self._runs_long = runs_long
        self._relayed = relayed
        self._relayed_generation = relayed_generation
        self._note = note
        self._lock = threading.Lock()
        self._built_for: tuple[int, int] | None = None
        self._set = SkillSet()

    def current(self) -> SkillSet:
        """The skills now; its ``generation`` grows each time they are rebuilt."""
        key = (self._catalog.generation, self._relayed_generation())
        with self._lock:
            if key != self._built_for:
                self._set = SkillSet.of(self._build(), generation=self._set.generation + 1)
                self._built_for = key
            return self._set

    def _build(self) -> list[Skill]:
        generated = generate_skills(
            self._catalog.records(), group_by=self._group_by, runs_long=self._runs_long, note=self._note
        )
        relayed = list(self._relayed()) if self._relayed is not None else []
        return [*with_hand_written(generated, self._written), *relayed]
