"""An operator mistake: a setting that does nothing without another one stops the start, naming both.

Before, ``--auth-tool-scopes`` without ``--auth`` was accepted silently: the server ran open while
its operator believed tools were scoped. The same for rate bursts without a rate limit, Redis
prefixes without Redis, resumable-stream budgets on a stateless server, upstream settings without
an ``mcp.json``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry

from apcore_mcp import serve
from apcore_mcp.settings import SettingError, Settings

ROOT = Path(__file__).resolve().parents[2]

CASES: list[tuple[dict[str, Any], str, str]] = [
    ({"auth_tool_scopes": ("admin.*=admin",)}, "auth_tool_scopes", "auth"),
    ({"auth_scopes": ("mcp",)}, "auth_scopes", "auth"),
    ({"auth_route_scopes": ("/metrics=metrics:read",)}, "auth_route_scopes", "auth"),
    ({"auth_filter_tools": True}, "auth_filter_tools", "auth"),
    ({"auth_metrics": False}, "auth_metrics", "auth"),
    ({"auth_audience": ("https://x.example/mcp",)}, "auth_audience", "auth"),
    ({"stdio_roles": ("admin",)}, "stdio_roles", "stdio_identity"),
    ({"rate_burst": 5}, "rate_burst", "rate_limit"),
    ({"max_concurrent_calls": None, "max_caller_share": 0.2}, "max_caller_share", "max_concurrent_calls"),
    ({"redis_prefix": "other:"}, "redis_prefix", "redis_url"),
    ({"stateless": True, "resume_max_bytes": 128 * 1024 * 1024}, "resume_max_bytes", "resumable"),
    ({"resumable": False, "sse_retry_ms": 50}, "sse_retry_ms", "resumable"),
    ({"json_response": True, "resume_stream_max_bytes": 4096}, "resume_stream_max_bytes", "json_response"),
    ({"allow_execute": True}, "allow_execute", "explorer"),
    ({"upstreams": False}, "upstreams", "mcp_config"),
    ({"upstream_log_dir": "/tmp/logs"}, "upstream_log_dir", "mcp_config"),
    ({"upstream_max_message_bytes": 4096}, "upstream_max_message_bytes", "mcp_config"),
]


@pytest.mark.parametrize(("values", "setting", "needed"), CASES, ids=[case[1] for case in CASES])
def test_a_setting_without_what_it_needs_is_refused_naming_both(
    values: dict[str, Any], setting: str, needed: str
) -> None:
    with pytest.raises(SettingError) as caught:
        Settings(**values)
    assert caught.value.field == setting
    assert setting in str(caught.value) and needed in str(caught.value)


def test_the_same_settings_with_what_they_need_are_accepted() -> None:
    Settings(auth="api-key", auth_api_keys=("0" * 64 + ":ops",), auth_tool_scopes=("admin.*=admin",))
    Settings(stdio_identity="ops", stdio_roles=("admin",), auth_filter_tools=True)
    Settings(rate_limit=2.0, rate_burst=5)
    Settings(max_caller_share=0.2)
    Settings(resumable=True, sse_retry_ms=50)


def test_serve_refuses_before_serving() -> None:
    with socket.socket() as taken:  # before the fix, serve() got as far as binding (an OSError here)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SettingError, match="auth_filter_tools"):
            serve(Registry(), transport="streamable-http", port=port, auth_filter_tools=True)


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--auth-tool-scopes", "admin.*=admin"], {}, ("--auth-tool-scopes", "needs auth")),
        ([], {"APCORE_MCP_RATE_BURST": "3"}, ("rate_burst", "needs rate_limit")),
    ],
    ids=["flag", "environment"],
)
def test_the_cli_stops_with_a_message_naming_both(args: list[str], env: dict[str, str], words: tuple[str, ...]) -> None:
    command = [sys.executable, "-m", "apcore_mcp", "--extensions-dir", "examples/extensions"]
    command += ["--transport", "stdio", *args]  # before: served until the end of stdin, exit 0
    result = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    for word in words:
        assert word in result.stderr
