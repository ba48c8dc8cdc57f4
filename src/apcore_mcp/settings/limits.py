"""How much the server takes on: workers, timeouts, sizes, sessions, the rate limit and the concurrency cap."""

from __future__ import annotations

from dataclasses import dataclass

from apcore_mcp.settings.option import SettingError, check_positive, check_whole, option


@dataclass(frozen=True, kw_only=True)
class LimitSettings:
    sync_workers: int = option(
        16,
        "threads running sync modules (a call that timed out or was cancelled frees its slot)",
        group="limits",
        kind="int",
    )
    timeout_ceiling_ms: int | None = option(
        None,
        "upper bound on any module's timeout in milliseconds; the module is cancelled past it",
        group="limits",
        kind="int",
    )
    max_output_bytes: int = option(
        16 * 1024 * 1024,
        "largest tool result sent, in bytes of JSON; a larger one is an error result",
        group="limits",
        kind="int",
    )
    max_result_bytes: int | None = option(
        None,
        "result budget in bytes (JSON of the content blocks and `structuredContent`); a larger result is cut "
        "and the cut announced in a last text block; a module's `mcp.max_result_bytes` annotation may lower it",
        group="limits",
        kind="int",
        default_text="no budget",
    )
    result_overflow_links: bool = option(
        False,
        "keep a cut result whole for 5 minutes behind a `result://` resource link only the same caller may read",
        group="limits",
        kind="bool",
    )
    minimal_text_with_structured: bool = option(
        False,
        "2026-07-28 era: the text block of a result with `structuredContent` is a one-line summary, not its JSON",
        group="limits",
        kind="bool",
    )
    max_body_bytes: int = option(
        4 * 1024 * 1024,
        "largest HTTP request body (chunked too; a larger one is answered 413) and stdio message accepted, in bytes",
        group="limits",
        kind="int",
    )
    header_timeout: float = option(
        10.0,
        "seconds a client gets to send a request's headers (our uvicorn protocol; plain uvicorn: docs/service.md)",
        group="limits",
        kind="float",
    )
    body_timeout: float = option(
        30.0,
        "seconds a client gets to send a whole request body; a slower one is answered 408 and disconnected",
        group="limits",
        kind="float",
    )
    max_sessions: int = option(
        1000,
        "Streamable HTTP sessions open at once (initialized or not); a new one past it is answered 503",
        group="limits",
        kind="int",
    )
    max_sessions_per_caller: int = option(
        100,
        "sessions one caller (its address, or its principal once authenticated) may hold; past it 429",
        group="limits",
        kind="int",
    )
    session_idle_timeout: float = option(
        600.0,
        "seconds a Streamable HTTP session may sit with no request and no open stream before it is closed",
        group="limits",
        kind="float",
    )
    rate_limit: float | None = option(
        None,
        "tool calls per second per caller (token bucket); past it HTTP 429 with `Retry-After`, "
        "JSON-RPC error -32010 in MCP",
        group="limits",
        kind="float",
        default_text="no limit",
    )
    rate_burst: int | None = option(
        None,
        "tool calls a caller may make at once before `rate_limit` applies",
        group="limits",
        kind="int",
        default_text="`rate_limit` rounded up",
    )
    max_concurrent_calls: int | None = option(
        500,
        "tool calls running at once; one more is refused at once (HTTP 503, JSON-RPC error -32011 in MCP)",
        group="limits",
        kind="int",
    )
    max_caller_share: float = option(
        0.5,
        "share of `max_concurrent_calls` one caller may hold (0-1]; past it the same fast refusal",
        group="limits",
        kind="float",
    )
    max_header_bytes: int = option(
        16 * 1024,
        "largest total size of a request's headers, in bytes; a larger one is answered 431",
        group="limits",
        kind="int",
    )
    max_json_depth: int = option(
        64, "deepest nesting of a JSON request body (objects and arrays); deeper is refused", group="limits", kind="int"
    )
    max_json_items: int = option(
        100_000,
        "most keys and elements in a JSON request body, all levels together; more is refused",
        group="limits",
        kind="int",
    )


def check_limits(s: LimitSettings) -> None:
    if isinstance(s.sync_workers, bool) or not isinstance(s.sync_workers, int) or not 1 <= s.sync_workers <= 1024:
        raise SettingError("sync_workers", f"sync_workers must be an integer from 1 to 1024, got {s.sync_workers!r}")
    ceiling = s.timeout_ceiling_ms
    if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling < 1):
        raise SettingError("timeout_ceiling_ms", f"timeout_ceiling_ms must be a positive integer, got {ceiling!r}")
    if isinstance(s.max_output_bytes, bool) or not isinstance(s.max_output_bytes, int) or s.max_output_bytes < 1024:
        raise SettingError(
            "max_output_bytes", f"max_output_bytes must be an integer >= 1024, got {s.max_output_bytes!r}"
        )
    budget = s.max_result_bytes
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or not (budget == 0 or budget >= 256)
    ):
        raise SettingError("max_result_bytes", f"max_result_bytes must be 0 (off) or an integer >= 256, got {budget!r}")
    share = s.max_caller_share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise SettingError("max_caller_share", f"max_caller_share must be a number in (0, 1], got {share!r}")


def check_traffic(s: LimitSettings) -> None:
    check_whole(s, "max_body_bytes", 1024)
    check_whole(s, "max_header_bytes", 1024)
    check_whole(s, "max_json_depth", 1)
    check_whole(s, "max_json_items", 1)
    check_whole(s, "max_sessions", 1)
    check_whole(s, "max_sessions_per_caller", 1)
    for name in ("header_timeout", "body_timeout", "session_idle_timeout"):
        check_positive(s, name)
    if s.rate_limit is not None:
        check_positive(s, "rate_limit")
    if s.rate_burst is not None:
        check_whole(s, "rate_burst", 1)
    if s.max_concurrent_calls is not None:
        check_whole(s, "max_concurrent_calls", 1)
