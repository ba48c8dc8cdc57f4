"""Result budgets: a tool result over its byte budget is cut where the model can see it was cut.

A result's size is the compact JSON of its content blocks and its ``structuredContent``
(UTF-8 bytes). Over the budget (``max_result_bytes``, or a module's own
``ModuleAnnotations(extra={"mcp.max_result_bytes": N})``, the smaller of the two), it is cut:

- ``structuredContent`` keeps every key; its lists keep their first items and its long strings
  their first characters, as many as fit what the other blocks leave (they keep at most half the
  budget). A text block repeating it as JSON, as ours do, is paid from the same share and
  rewritten from the cut value. Left out only when even the emptiest form does not fit.
- Content blocks are kept in order; the first that does not fit is cut if it is text (at a
  character, never inside one) and dropped otherwise, and every block after it is dropped.
- A final text block announces the cut: bytes sent out of the whole, and how to get the rest
  (a kept ``result://`` link when ``result_overflow_links`` is on, else narrower arguments).

So the result as sent is at most the budget plus the announcement (and its link).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from apcore_mcp.calls.context import CallContext
from apcore_mcp.calls.kept_results import KeptResults
from apcore_mcp.calls.signin import is_anonymous
from apcore_mcp.tools.content import dump_json

RESULT_BUDGET_KEY = "mcp.max_result_bytes"
"""The ``ModuleAnnotations.extra`` key giving a module's own result budget in bytes."""
TRUNCATED_META_KEY = "apcore_mcp/truncated"
"""``_meta`` key of the announcement block: the cut's figures for programs."""
STRING_STEP = 32
"""Characters a long string keeps per list item kept, when structured content is shortened."""


def size_of(value: object) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (what the budget counts)."""
    return len(dump_json(value).encode("utf-8"))


def module_budget(annotations: object) -> int | None:
    """A module's own budget from its annotations (``None``: none, or not a positive integer)."""
    extra = getattr(annotations, "extra", None)
    value = extra.get(RESULT_BUDGET_KEY) if isinstance(extra, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def effective_budget(server: int | None, module: int | None) -> int | None:
    """The smaller of the server's and the module's budget: a module may tighten it, never lift it."""
    budgets = [budget for budget in (server, module) if budget]
    return min(budgets) if budgets else None


@dataclass(frozen=True, slots=True)
class Cut:
    """What a cut did: the whole result's size and what was sent of it."""

    original: int
    sent: int
    budget: int
    structured: str
    """``kept``, ``shortened``, ``left out`` or ``none`` (the result had none)."""


def minimal_text(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the text block repeating ``structuredContent`` replaced by a one-line summary
    (2026-07-28, ``minimal_text_with_structured``: the structured value is what the host reads)."""
    content = [block for block in result.get("content") or [] if isinstance(block, dict)]
    structured = result.get("structuredContent")
    mirror = _mirror_index(content, structured)
    if mirror is None or not isinstance(structured, dict):
        return result
    line = f"Result in structuredContent: {len(structured)} field(s), {size_of(structured)} bytes of JSON."
    content[mirror] = {"type": "text", "text": line}
    return {**result, "content": content}


def fit(result: dict[str, Any], budget: int) -> tuple[dict[str, Any], Cut | None]:
    """``result`` unchanged when within ``budget``, else cut to it (no announcement: see ``announce``)."""
    content = [block for block in result.get("content") or [] if isinstance(block, dict)]
    structured = result.get("structuredContent")
    original = size_of(content) + (size_of(structured) if structured is not None else 0)
    if original <= budget:
        return result, None
    mirror = _mirror_index(content, structured)
    room = budget - 2  # the content list's brackets; each block costs its JSON and a comma
    state = "none"
    if isinstance(structured, dict):
        others = sum(size_of(block) + 1 for index, block in enumerate(content) if index != mirror)
        mirrored = content[mirror] if mirror is not None else None
        structured, state = _shortened(structured, room - min(others, budget // 2), mirrored)
        if structured is None:  # left out: the repeating text block is the data now, cut like any text
            mirror = None
        else:
            room -= _cost(structured, mirrored)
            if mirror is not None:
                content[mirror] = {**content[mirror], "text": dump_json(structured)}
    kept = _blocks_within(content, room, mirror)
    cut = {**result, "content": kept}
    cut.pop("structuredContent", None)
    if structured is not None:
        cut["structuredContent"] = structured
    sent = size_of(kept) + (size_of(structured) if structured is not None else 0)
    return cut, Cut(original=original, sent=sent, budget=budget, structured=state)


def announce(result: dict[str, Any], cut: Cut, tool: str, link: Mapping[str, Any] | None) -> dict[str, Any]:
    """``result`` with the final block(s) saying what was cut and how to get the rest."""
    removed = cut.original - cut.sent
    text = (
        f"[Result truncated: {cut.sent} of {cut.original} bytes sent ({removed} bytes cut) to fit the "
        f"{cut.budget}-byte result budget of {tool}."
    )
    if cut.structured == "shortened":
        text += " structuredContent was shortened: its lists keep their first items, long strings their start."
    elif cut.structured == "left out":
        text += " structuredContent was left out: even its shortest form is over the budget."
    if link is not None:
        text += f" The whole result is kept for you at {link['uri']} (read it with resources/read before it expires).]"
    else:
        text += " To get the rest, call the tool again asking for less (a filter, a page, a smaller limit).]"
    figures = {"originalBytes": cut.original, "sentBytes": cut.sent, "budgetBytes": cut.budget}
    blocks = [*result["content"], {"type": "text", "text": text, "_meta": {TRUNCATED_META_KEY: figures}}]
    if link is not None:
        blocks.append(dict(link))
    return {**result, "content": blocks}


def _mirror_index(content: list[dict[str, Any]], structured: object) -> int | None:
    """The text block that repeats ``structuredContent`` as JSON (ours always do), if any."""
    if not isinstance(structured, dict):
        return None
    encoded = dump_json(structured)
    for index, block in enumerate(content):
        if block.get("type") == "text" and block.get("text") == encoded:
            return index
    return None


def _shortened(
    structured: dict[str, Any], share: int, mirrored: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """``structured`` with lists and strings capped so it (and the text block repeating it) fit ``share``."""
    if _cost(structured, mirrored) <= share:
        return structured, "kept"
    if _cost(_capped(structured, 0), mirrored) > share:
        return None, "left out"
    low, high = 0, _longest(structured)
    while low < high:  # the largest cap that fits: sizes only grow with the cap
        middle = (low + high + 1) // 2
        if _cost(_capped(structured, middle), mirrored) <= share:
            low = middle
        else:
            high = middle - 1
    shortened = _capped(structured, low)
    assert isinstance(shortened, dict)
    return shortened, "shortened"


def _cost(structured: Any, mirrored: dict[str, Any] | None) -> int:
    """Bytes ``structured`` takes, with the text block repeating it as JSON when there is one (and its comma)."""
    if mirrored is None:
        return size_of(structured)
    return size_of(structured) + size_of({**mirrored, "text": dump_json(structured)}) + 1


def _capped(value: Any, items: int) -> Any:
    """``value`` with each list cut to ``items`` items and each string to ``items * STRING_STEP`` characters."""
    if isinstance(value, dict):
        return {key: _capped(item, items) for key, item in value.items()}
    if isinstance(value, list):
        return [_capped(item, items) for item in value[:items]]
    if isinstance(value, str):
        return value[: items * STRING_STEP]
    return value


def _longest(value: Any) -> int:
    """A cap past which ``_capped`` changes nothing (the longest list, or string in steps)."""
    longest = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            longest = max(longest, len(node))
            stack.extend(node)
        elif isinstance(node, str):
            longest = max(longest, -(-len(node) // STRING_STEP))
    return longest


def _blocks_within(content: list[dict[str, Any]], room: int, mirror: int | None) -> list[dict[str, Any]]:
    """Blocks in order while they fit ``room`` bytes (each with its comma); the first that does not fit
    is cut if it is text, and it ends the walk (the mirror block is already paid for and always stays)."""
    kept: list[dict[str, Any]] = []
    stopped = False
    for index, block in enumerate(content):
        if index == mirror:
            kept.append(block)
            continue
        if stopped:
            continue
        size = size_of(block) + 1
        if size <= room:
            kept.append(block)
            room -= size
            continue
        stopped = True
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            head = _text_within(block, room - 1)
            if head is not None:
                kept.append(head)
    return kept


def _text_within(block: dict[str, Any], room: int) -> dict[str, Any] | None:
    """The text block cut to the most characters whose JSON fits ``room`` bytes (``None``: not even one)."""
    text: str = block["text"]

    def sized(count: int) -> int:
        return size_of({**block, "text": text[:count]})

    if sized(1) > room:
        return None
    low, high = 1, min(len(text), room)  # a character is at least one byte
    while low < high:  # the most characters that fit: never inside a character (str indexes code points)
        middle = (low + high + 1) // 2
        if sized(middle) <= room:
            low = middle
        else:
            high = middle - 1
    return {**block, "text": text[:low]}


OFFLOAD_BYTES = 256 * 1024
"""Results larger than this are cut on a worker thread (a cut serializes the result a few times)."""


@dataclass(eq=False)
class ResultBudget:
    """The server's result budget, applied by the router to every successful call's result.

    ``links`` keeps whole results behind ``result://`` links (``result_overflow_links``);
    ``observers`` are told the tool name of each cut result (``/metrics``).
    """

    max_bytes: int | None = None
    minimal_text: bool = False
    links: KeptResults | None = None
    observers: list[Callable[[str], None]] = field(default_factory=list)

    def active(self, annotations: object, era: str) -> bool:
        """Whether a call of a module with these annotations, in this era, is looked at at all."""
        return bool(self.max_bytes or module_budget(annotations) or (self.minimal_text and era == "modern"))

    async def apply(self, tool: str, annotations: object, wire: dict[str, Any], call: CallContext) -> dict[str, Any]:
        """``wire`` (a successful ``CallToolResult``) within budget, announced when cut."""
        if self.minimal_text and call.era == "modern":
            wire = minimal_text(wire)
        budget = effective_budget(self.max_bytes, module_budget(annotations))
        if budget is None:
            return wire
        if _rough_size(wire) <= OFFLOAD_BYTES:
            return self._cut(tool, wire, budget, owner_of(call))
        return await anyio.to_thread.run_sync(self._cut, tool, wire, budget, owner_of(call))

    def _cut(self, tool: str, wire: dict[str, Any], budget: int, owner: str | None) -> dict[str, Any]:
        cut_wire, cut = fit(wire, budget)
        if cut is None:
            return wire
        link = self._keep(tool, wire, owner)
        for observe in self.observers:
            observe(tool)
        return announce(cut_wire, cut, tool, link)

    def _keep(self, tool: str, wire: dict[str, Any], owner: str | None) -> dict[str, Any] | None:
        if self.links is None or owner is None:
            return None
        uri = self.links.keep(owner, dump_json(wire))
        if uri is None:
            return None
        return {
            "type": "resource_link",
            "uri": uri,
            "name": f"{tool} result",
            "description": f"The whole result of this {tool} call, kept for {int(self.links.ttl)} seconds",
            "mimeType": "application/json",
        }


def _rough_size(wire: Mapping[str, Any]) -> int:
    """The characters of the content blocks' strings, twice when ``structuredContent`` repeats them:
    enough to choose the thread, without encoding the result on the event loop to measure it."""
    blocks = wire.get("content") or []
    strings = sum(
        len(value) for block in blocks if isinstance(block, dict) for value in block.values() if isinstance(value, str)
    )
    return 2 * strings if wire.get("structuredContent") is not None else strings


def owner_of(call: CallContext) -> str | None:
    """Who may read a kept result: the authenticated principal; else the connection (MCP session)
    of a handshake-era call; else, in the 2026-07-28 era, which has no sessions, the caller's address
    (the local process on stdio and in memory). ``None`` (nothing kept) when there is none of these.

    The principal every caller without credentials shares (``auth_public_tools``) names no one: such a
    caller is told apart by its session, and in the 2026-07-28 era, where it has none, gets no link.
    """
    principal = call.principal
    if principal is not None and not is_anonymous(principal.identity):
        return f"principal:{call.caller}"
    if call.era == "modern":
        return f"address:{call.caller}" if principal is None else None
    if call.connection is not None:
        return f"connection:{call.connection}"
    return None
