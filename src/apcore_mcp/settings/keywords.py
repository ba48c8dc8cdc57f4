"""``SettingsOptions``: the setting keywords of ``serve()`` and ``BackgroundServer()``, typed.

Generated from the ``Settings`` declarations by ``scripts/update_settings_options.py``; do not
edit by hand (``tests/project/test_public_types.py`` fails while this differs from what it writes).
"""

from __future__ import annotations

from typing import TypedDict


class SettingsOptions(TypedDict, total=False):
    """Every ``Settings`` field as an optional keyword; list settings also take a ``list[str]``."""

    name: str
    version: str | None
    tags: tuple[str, ...] | list[str] | None
    prefix: str | None
    strict_modules: bool
    host: str
    port: int
    allowed_hosts: tuple[str, ...] | list[str]
    allowed_origins: tuple[str, ...] | list[str]
    forwarded_allow_ips: tuple[str, ...] | list[str]
    dynamic: bool
    stateless: bool
    json_response: bool
    direct_path: bool
    resumable: bool
    sse_retry_ms: int
    resume_max_bytes: int
    resume_stream_max_bytes: int
    approval: str
    approval_policy: str
    destructive_approval: bool
    audit_arguments: bool
    validate_inputs: bool
    request_state_keys: tuple[str, ...] | list[str]
    input_timeout: float
    request_state_ttl: float
    task_ttl: float
    task_lease: float
    task_max_count: int
    task_max_bytes: int
    prompts_dir: str | None
    skills: bool
    skills_group_by: str
    skills_dir: str | None
    metrics: bool
    explorer: bool
    explorer_prefix: str
    allow_execute: bool
    execute_token: str | None
    admin_routes: bool
    server_card: bool
    http_parser: str
    event_loop: str
    shutdown_timeout: float
    sync_workers: int
    timeout_ceiling_ms: int | None
    max_output_bytes: int
    max_result_bytes: int | None
    result_overflow_links: bool
    minimal_text_with_structured: bool
    max_body_bytes: int
    header_timeout: float
    body_timeout: float
    max_sessions: int
    max_sessions_per_caller: int
    session_idle_timeout: float
    rate_limit: float | None
    rate_burst: int | None
    max_concurrent_calls: int | None
    max_caller_share: float
    max_header_bytes: int
    max_json_depth: int
    max_json_items: int
    log_level: str | None
    trace_arguments: bool
    workers: int
    redis_url: str | None
    redis_prefix: str
    audit_retention: float
    broadcast_changes: bool
    auth: str
    public_url: str | None
    auth_issuer: str | None
    auth_audience: tuple[str, ...] | list[str]
    auth_jwks_url: str | None
    auth_jwks_ttl: float
    auth_jwt_key: str | None
    auth_jwt_key_file: str | None
    auth_algorithms: tuple[str, ...] | list[str]
    auth_scopes: tuple[str, ...] | list[str]
    auth_route_scopes: tuple[str, ...] | list[str]
    auth_tool_scopes: tuple[str, ...] | list[str]
    auth_public_tools: tuple[str, ...] | list[str]
    auth_challenge: str
    auth_id_claim: str
    auth_roles_claim: str
    auth_api_keys: tuple[str, ...] | list[str]
    auth_api_keys_file: str | None
    auth_metrics: bool
    auth_filter_tools: bool
    auth_admin_scope: str
    auth_approver_scope: str
    stdio_identity: str | None
    stdio_identity_type: str
    stdio_roles: tuple[str, ...] | list[str]
    mcp_config: str | None
    from_openapi: tuple[str, ...] | list[str]
    upstreams: bool
    strict_upstreams: bool
    upstream_log_dir: str | None
    upstream_max_message_bytes: int
    tool_mode: str
    toolset: str | None
    pins: str | None
    pins_accept_new: bool
    auth_pins_scope: str
