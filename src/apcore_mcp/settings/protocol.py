"""How the server speaks MCP: live lists, sessions and streams (resuming them), approval, input rounds, prompts.

Also the transports ``serve()`` takes (``TRANSPORTS``): a launch choice, not a setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from apcore_mcp.settings.option import SettingError, as_tuple, check_positive, check_whole, option, set_field

Transport = Literal["stdio", "streamable-http", "sse"]
TRANSPORTS: tuple[str, ...] = ("stdio", "streamable-http", "sse")
APPROVAL_MODES: tuple[str, ...] = ("elicit", "auto")
APPROVAL_POLICIES: tuple[str, ...] = ("client", "person", "deny")
SKILLS_GROUP_BY: tuple[str, ...] = ("prefix", "tag")


@dataclass(frozen=True, kw_only=True)
class ProtocolSettings:
    dynamic: bool = option(False, "reflect registry changes live (`listChanged`)", group="protocol", kind="bool")
    stateless: bool = option(
        False, "Streamable HTTP without sessions, for several replicas", group="protocol", kind="bool"
    )
    json_response: bool = option(
        False, "answer `POST /mcp` with JSON instead of an SSE stream", group="protocol", kind="bool"
    )
    direct_path: bool = option(
        True,
        "answer 2026-07-28 requests that cannot stream (no progress token or log level) without the SDK's "
        "per-request streams: the same checks and bytes, less work; off sends every request through the SDK",
        group="protocol",
        kind="bool",
    )
    resumable: bool = option(
        True,
        "keep recent stream events so a handshake-era client whose stream broke resumes with Last-Event-ID "
        "(bounded memory)",
        group="protocol",
        kind="bool",
    )
    sse_retry_ms: int = option(
        1000,
        "reconnection delay suggested to clients of resumable streams, in milliseconds",
        group="protocol",
        kind="int",
    )
    resume_max_bytes: int = option(
        # 48, not 64: the allocator's share on top keeps RSS within 64 MiB of a server keeping nothing.
        48 * 1024 * 1024,
        "bytes of stream events kept for resuming, all streams together; the oldest events go first",
        group="protocol",
        kind="int",
    )
    resume_stream_max_bytes: int = option(
        8 * 1024 * 1024,
        "bytes of events kept for one stream; a client resuming past what was dropped gets an error",
        group="protocol",
        kind="int",
    )
    approval: str = option(
        "elicit",
        "how `requires_approval` modules are confirmed: `elicit` asks the client's user (fails closed); "
        "`auto` runs them unconfirmed (logs a WARNING at start)",
        group="protocol",
        kind="choice",
        choices=APPROVAL_MODES,
    )
    approval_policy: str = option(
        "client",
        "who decides an approval-gated call: `client` (the client's elicitation answer), `person` (a person "
        "on this server's approval page, which the client cannot answer for) or `deny` (refused); a module's "
        "`mcp.approval` annotation may only make its own stricter",
        group="protocol",
        kind="choice",
        choices=APPROVAL_POLICIES,
    )
    destructive_approval: bool = option(
        False,
        "approval-gated modules marked destructive are decided by a `person` (unless the policy is stricter)",
        group="protocol",
        kind="bool",
    )
    audit_arguments: bool = option(
        False,
        "approval audit records (logger `apcore_mcp.audit`) include the call's arguments, redacted; "
        "otherwise only their SHA-256 digest",
        group="protocol",
        kind="bool",
    )
    validate_inputs: bool = option(
        False,
        "check a call's arguments against the tool's input schema before anything runs (no ACL, approval, "
        "rate limit or middleware): a bad one is refused with the fields named",
        group="protocol",
        kind="bool",
    )
    request_state_keys: tuple[str, ...] = option(
        (),
        "secrets (32+ characters each, comma list) sealing 2026-07-28 `requestState`: the first seals, all open; "
        "a random key per process when unset",
        group="protocol",
        kind="list",
        metavar="KEY[,KEY]",
        secret=True,
    )
    input_timeout: float = option(
        300.0,
        "seconds a handshake-era client gets to answer an elicitation, sampling or roots request "
        "(an unanswered approval is a rejection)",
        group="protocol",
        kind="float",
    )
    request_state_ttl: float = option(
        600.0,
        "seconds a 2026-07-28 input-required round stays answerable (its sealed requestState expires after)",
        group="protocol",
        kind="float",
    )
    task_ttl: float = option(
        3600.0,
        "seconds a task's record and result are kept after it starts (a client may ask for less); "
        "then `tasks/get` answers it is unknown",
        group="protocol",
        kind="float",
    )
    task_lease: float = option(
        15.0,
        "with `redis_url`: seconds after its replica stops renewing it that a running task reads `failed` "
        "on every replica (the replica renews every third of it)",
        group="protocol",
        kind="float",
    )
    task_max_count: int = option(
        1000,
        "task records this process keeps in memory (without `redis_url`); finished ones make room first; "
        "one caller may have half of it running on a replica",
        group="protocol",
        kind="int",
    )
    task_max_bytes: int = option(
        64 * 1024 * 1024,
        "bytes of task records (results included) kept in memory, or in one Redis record; "
        "a result past it fails its task",
        group="protocol",
        kind="int",
    )
    prompts_dir: str | None = option(
        None, "directory of prompt files (`*.yaml`) served as MCP prompts", group="protocol", metavar="DIR"
    )
    skills: bool = option(
        False,
        "serve the MCP Skills extension: one generated skill per module group, plus `skills_dir`'s",
        group="protocol",
        kind="bool",
    )
    skills_group_by: str = option(
        "prefix",
        "how modules are grouped into generated skills: `prefix` (the id's first segment) or `tag`",
        group="protocol",
        kind="choice",
        choices=SKILLS_GROUP_BY,
    )
    skills_dir: str | None = option(
        None,
        "directory of hand-written skills (a folder with a `SKILL.md` per skill); they win over generated ones",
        group="protocol",
        metavar="DIR",
    )

    @property
    def keeps_stream_events(self) -> bool:
        """Whether streams resume with ``Last-Event-ID``: sessions answering over SSE, with ``resumable`` on."""
        return self.resumable and not self.stateless and not self.json_response


def normalize_transport(transport: str) -> str:
    """Lower-case ``transport`` and check it is one we serve."""
    value = transport.lower() if isinstance(transport, str) else transport
    if value not in TRANSPORTS:
        raise ValueError(f"Unknown transport: {transport!r}. Must be one of: {', '.join(TRANSPORTS)}")
    return str(value)


def check_protocol(s: ProtocolSettings) -> None:
    if s.approval not in APPROVAL_MODES:
        raise SettingError("approval", f"approval must be one of: {', '.join(APPROVAL_MODES)}, got {s.approval!r}")
    if s.approval_policy not in APPROVAL_POLICIES:
        choices = ", ".join(APPROVAL_POLICIES)
        raise SettingError("approval_policy", f"approval_policy must be one of: {choices}, got {s.approval_policy!r}")
    keys = as_tuple(s.request_state_keys, "request_state_keys")
    if any(not isinstance(key, str) or len(key) < 32 for key in keys):
        raise SettingError("request_state_keys", "request_state_keys entries must be at least 32 characters")
    set_field(s, "request_state_keys", keys)
    if s.prompts_dir is not None and (not isinstance(s.prompts_dir, str) or not s.prompts_dir):
        raise SettingError("prompts_dir", "prompts_dir must not be empty")
    if s.skills_group_by not in SKILLS_GROUP_BY:
        choices = ", ".join(SKILLS_GROUP_BY)
        raise SettingError("skills_group_by", f"skills_group_by must be one of: {choices}, got {s.skills_group_by!r}")
    if s.skills_dir is not None and (not isinstance(s.skills_dir, str) or not s.skills_dir):
        raise SettingError("skills_dir", "skills_dir must not be empty")
    check_positive(s, "input_timeout")
    check_positive(s, "request_state_ttl")
    check_positive(s, "task_ttl")
    check_positive(s, "task_lease")
    check_whole(s, "task_max_count", 1)
    check_whole(s, "task_max_bytes", 1024)
    check_positive(s, "sse_retry_ms")
    check_whole(s, "resume_max_bytes", 64 * 1024)
    check_whole(s, "resume_stream_max_bytes", 1024)
    if s.resume_stream_max_bytes > s.resume_max_bytes:
        raise SettingError("resume_stream_max_bytes", "resume_stream_max_bytes must not exceed resume_max_bytes")
