"""mcp.json: parsing, every validation message, ${VAR} expansion, secrets never shown, toolsets, module ids."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from apcore_mcp.run.cli import build_parser
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.settings.env import settings_from_env
from apcore_mcp.upstream.config.parse import (
    DEFAULT_TOOLSET,
    ServerSpec,
    UpstreamConfigError,
    load_config,
    parse_config,
    resolve_selection,
)
from apcore_mcp.upstream.expand import MASK, RedactingFilter, Redactor, expand
from apcore_mcp.upstream.names import MAX_ID_LENGTH, SEGMENT, module_id, module_ids, server_segment

CANARY = "canary-7f3a9c1e-secret"


def servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


def problems_of(data: Any, environ: dict[str, str] | None = None, **kwargs: Any) -> list[str]:
    with pytest.raises(UpstreamConfigError) as caught:
        parse_config(data, environ or {}, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def test_stdio_http_and_sse_servers() -> None:
    config = parse_config(
        servers(
            files={"command": "npx", "args": ["-y", "fs"], "env": {"B": "2", "A": "1"}, "cwd": "/srv", "timeout": 5},
            gh={"url": "https://example.test/mcp", "headers": {"X-B": "b", "X-A": "a"}, "sharing": "per-principal"},
            legacy={"url": "http://127.0.0.1:1/sse", "type": "sse", "protocol": "legacy", "aliases": ["old"]},
        ),
        {},
    )
    files, gh, legacy = config.servers["files"], config.servers["gh"], config.servers["legacy"]
    assert (files.transport, files.command, files.args, files.cwd, files.timeout) == (
        "stdio",
        "npx",
        ("-y", "fs"),
        "/srv",
        5.0,
    )
    assert files.env == (("A", "1"), ("B", "2"))  # sorted: the key does not depend on the file's order
    assert (gh.transport, gh.headers, gh.sharing, gh.is_remote) == (
        "http",
        (("X-A", "a"), ("X-B", "b")),
        "per-principal",
        True,
    )
    assert (legacy.transport, legacy.protocol, legacy.aliases) == ("sse", "legacy", ("old",))
    assert not files.is_remote


def test_keys_cover_the_whole_spec() -> None:
    base = {"command": "run", "args": ["a"], "env": {"X": "1", "Y": "2"}}
    one = parse_config(servers(s=base), {}).servers["s"]
    same = parse_config(servers(s={**base, "env": {"Y": "2", "X": "1"}, "timeout": 9}), {}).servers["s"]
    assert one.key == same.key  # env order and timeout do not make another server
    for change in ({"args": ["b"]}, {"env": {"X": "1"}}, {"cwd": "/tmp"}, {"command": "other"}):
        assert parse_config(servers(s={**base, **change}), {}).servers["s"].key != one.key, change
    assert parse_config(servers(t=base), {}).servers["t"].key != one.key  # another name, another server


def test_env_numbers_and_booleans_become_strings() -> None:
    spec = parse_config(servers(s={"command": "run", "env": {"N": 3, "F": 1.5, "T": True, "O": False}}), {}).servers[
        "s"
    ]
    assert dict(spec.env) == {"N": "3", "F": "1.5", "T": "true", "O": "false"}


@pytest.mark.parametrize(
    ("entry", "where", "fragment"),
    [
        ({"command": "x", "url": "http://h/mcp"}, "mcpServers.s", "mutually exclusive"),
        ({}, "mcpServers.s", 'needs "command"'),
        ({"command": "x", "headers": {"A": "b"}}, "mcpServers.s.headers", "only for url servers"),
        ({"command": "x", "url": "http://h"}, "mcpServers.s", "mutually exclusive"),
        ({"url": "http://h/mcp", "env": {"A": "b"}}, "mcpServers.s.env", "only for command servers"),
        ({"url": "http://h/mcp", "args": ["a"]}, "mcpServers.s.args", "only for command servers"),
        ({"url": "http://h/mcp", "cwd": "/"}, "mcpServers.s.cwd", "only for command servers"),
        ({"url": "http://h/mcp", "transport": "ws"}, "mcpServers.s.transport", "must be one of http, sse"),
        ({"url": "http://h/mcp", "transport": "stdio"}, "mcpServers.s.transport", "needs a command"),
        ({"command": "x", "transport": "sse"}, "mcpServers.s.transport", "needs a url"),
        ({"url": "http://h/mcp", "transport": "http", "type": "sse"}, "mcpServers.s.transport", "disagree"),
        ({"command": "  "}, "mcpServers.s.command", "non-empty string"),
        ({"command": 7}, "mcpServers.s.command", "non-empty string"),
        ({"url": "ftp://h"}, "mcpServers.s.url", "http:// or https://"),
        ({"url": ""}, "mcpServers.s.url", "non-empty string"),
        ({"command": "x", "args": "a b"}, "mcpServers.s.args", "list of strings"),
        ({"command": "x", "env": {"A": ["b"]}}, "mcpServers.s.env.A", "must be a string"),
        ({"command": "x", "env": ["A"]}, "mcpServers.s.env", "object of name -> string"),
        ({"url": "http://h/mcp", "headers": {"A": 1}}, "mcpServers.s.headers.A", "must be a string"),
        ({"command": "x", "cwd": ""}, "mcpServers.s.cwd", "non-empty string"),
        ({"command": "x", "timeout": 0}, "mcpServers.s.timeout", "positive number of seconds"),
        ({"command": "x", "timeout": "5"}, "mcpServers.s.timeout", "positive number of seconds"),
        ({"command": "x", "enabled": "yes"}, "mcpServers.s.enabled", "true or false"),
        ({"command": "x", "sharing": "global"}, "mcpServers.s.sharing", "shared, per-principal, per-session"),
        ({"command": "x", "protocol": "v1"}, "mcpServers.s.protocol", "auto, legacy"),
        ({"command": "x", "aliases": "a"}, "mcpServers.s.aliases", "list of strings"),
        ({"command": "x", "aliases": ["s"]}, "mcpServers.s.aliases", "already a server name"),
        ({"command": "x", "description": 3}, "mcpServers.s.description", "must be a string"),
        ({"command": "x", "comand": "typo"}, "mcpServers.s.comand", "unknown field"),
        ("npx fs", "mcpServers.s", "must be an object"),
    ],
)
def test_each_problem_names_the_server_and_the_field(entry: Any, where: str, fragment: str) -> None:
    found = problems_of(servers(s=entry))
    assert any(text.startswith(f"{where}: ") and fragment in text for text in found), found


def test_document_level_problems() -> None:
    assert problems_of([]) == ["mcp config: must be a JSON object"]
    assert problems_of({"mcpServers": []})[0].startswith("mcpServers: must be an object")
    assert problems_of({"mcpServers": {"": {"command": "x"}}})[0].startswith("mcpServers: server names")
    assert problems_of({"mcpServers": {}, "toolsets": []})[0].startswith("toolsets: must be an object")


def test_every_problem_is_reported_at_once() -> None:
    found = problems_of(servers(a={"command": ""}, b={"url": "x"}, c={"command": "x", "timeout": -1}))
    assert [text.split(":")[0] for text in found] == [
        "mcpServers.a.command",
        "mcpServers.b.url",
        "mcpServers.c.timeout",
    ]


@pytest.mark.parametrize(
    ("toolset", "where", "fragment"),
    [
        ({"servers": ["nope"]}, "toolsets.x.servers", "'nope' is neither a server nor an alias"),
        ({"servers": 3}, "toolsets.x.servers", 'must be "all"'),
        ({"servers": "all", "modules": "yes"}, "toolsets.x.modules", "must be true, false"),
        ({"servers": "all", "modules": {"tags": "a"}}, "toolsets.x.modules.tags", "list of non-empty strings"),
        ({"servers": "all", "modules": {"prefix": ""}}, "toolsets.x.modules.prefix", "non-empty string"),
        ({"servers": "all", "toolMode": "grep"}, "toolsets.x.toolMode", "list, search"),
        ({"servers": "all", "extra": 1}, "toolsets.x.extra", "unknown field"),
        ("all", "toolsets.x", "must be an object"),
    ],
)
def test_toolset_problems(toolset: Any, where: str, fragment: str) -> None:
    found = problems_of({**servers(s={"command": "x"}), "toolsets": {"x": toolset}})
    assert any(text.startswith(f"{where}: ") and fragment in text for text in found), found


def test_toolsets_select_by_name_alias_all_and_comma_lists() -> None:
    config = parse_config(
        {
            **servers(
                fs={"command": "fs", "aliases": ["files", "local"]},
                git={"command": "git", "aliases": ["local"]},
                web={"url": "https://w.test/mcp"},
                off={"command": "off", "enabled": False},
            ),
            "toolsets": {
                "every": {"servers": "all"},
                "listed": {"servers": ["web", "files"]},
                "comma": {"servers": " web , files ,"},
                "group": {"servers": ["local"], "modules": False},
                "none": {"servers": [], "modules": {"tags": ["public"], "prefix": "text."}, "toolMode": "search"},
                "disabled": {"servers": ["off", "web"]},
            },
        },
        {},
    )
    assert config.toolset("every").servers == ("fs", "git", "web")  # the disabled one drops out
    assert config.toolset("listed").servers == ("web", "fs")
    assert config.toolset("comma").servers == ("web", "fs")
    assert config.toolset("group").servers == ("fs", "git") and not config.toolset("group").modules
    none = config.toolset("none")
    assert (none.servers, none.tags, none.prefix, none.tool_mode) == ((), ("public",), "text.", "search")
    assert config.toolset("disabled").servers == ("web",)
    assert config.skipped == {"off": "disabled"}
    default = config.toolset(DEFAULT_TOOLSET)
    assert default.implicit and default.servers == ("fs", "git", "web") and default.modules
    with pytest.raises(KeyError, match="Unknown toolset 'nope'"):
        config.toolset("nope")


def test_the_old_key_scopes_is_read_with_a_deprecation_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = {**servers(s={"command": "x"}), "scopes": {"x": {"servers": ["s"]}}}
    with pytest.warns(DeprecationWarning, match='"scopes" is deprecated, rename it "toolsets"'):
        config = parse_config(data, {})
    assert config.toolset("x").servers == ("s",)
    assert '"scopes" is deprecated' in caplog.text  # for the operator, whose warnings filter hides the other
    with pytest.warns(DeprecationWarning, match="scopes"):
        found = problems_of({**servers(s={"command": "x"}), "scopes": {"x": {"servers": ["nope"]}}})
    assert found == ["scopes.x.servers: 'nope' is neither a server nor an alias"]  # named as the file spells it


def test_both_toolsets_and_scopes_is_an_error() -> None:
    found = problems_of({**servers(s={"command": "x"}), "toolsets": {}, "scopes": {}})
    assert found == ['scopes: the old name of "toolsets": give one of them, not both']


def test_resolve_selection_trims_and_reports_unknown_entries() -> None:
    names, aliases = ["a", "b", "c"], {"grp": ["c", "a"]}
    assert resolve_selection("all", names, aliases) == (["a", "b", "c"], [])
    assert resolve_selection(" b, grp ", names, aliases) == (["b", "c", "a"], [])
    assert resolve_selection(["x", "y"], names, aliases) == ([], ["x", "y"])
    assert resolve_selection("", names, aliases) == ([], [])


# -- ${VAR} --------------------------------------------------------------------------------------


def test_expand_forms() -> None:
    environ = {"SET": "value", "EMPTY": ""}
    assert expand("a${SET}b", environ).text == "avalueb"
    assert expand("${MISSING:-fallback}", environ).text == "fallback"
    assert expand("${EMPTY:-fallback}", environ).text == "fallback"
    assert expand("${EMPTY}", environ).text == ""
    assert expand("$SET and ${SET}", environ).text == "$SET and value"  # only the braced form
    missing = expand("x${MISSING}y", environ)
    assert missing.missing == ["MISSING"] and missing.text == "x${MISSING}y"


def test_placeholders_expand_in_every_field_after_parsing() -> None:
    tricky = 'quote" back\\slash'
    environ = {"CMD": "/bin/run", "ARG": "--flag", "TOKEN": tricky, "DIR": "/work", "HOST": "h.test"}
    config = parse_config(
        servers(
            s={"command": "${CMD}", "args": ["${ARG}", "x${ARG:-no}"], "env": {"T": "${TOKEN}"}, "cwd": "${DIR}"},
            r={"url": "https://${HOST}/mcp?k=${TOKEN}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        ),
        environ,
    )
    s, r = config.servers["s"], config.servers["r"]
    assert (s.command, s.args, dict(s.env), s.cwd) == ("/bin/run", ("--flag", "x--flag"), {"T": tricky}, "/work")
    assert r.url == f"https://h.test/mcp?k={tricky}" and dict(r.headers) == {"Authorization": f"Bearer {tricky}"}


def test_a_missing_variable_skips_that_server_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    data = servers(gh={"url": "https://g.test/mcp", "headers": {"A": "${GH_TOKEN}"}}, fs={"command": "fs"})
    config = parse_config(data, {})
    assert list(config.servers) == ["fs"] and "GH_TOKEN" in config.skipped["gh"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "'gh'" in warnings[0].getMessage() and "GH_TOKEN" in warnings[0].getMessage()


def test_strict_mode_makes_a_missing_variable_an_error() -> None:
    found = problems_of(servers(gh={"command": "x", "env": {"T": "${GH_TOKEN}"}}), strict=True)
    assert found == ["mcpServers.gh: environment variable(s) GH_TOKEN not set (strict mode)"]


def test_expanded_values_never_appear_in_logs_errors_or_reprs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    environ = {"TOKEN": CANARY}
    config = parse_config(
        servers(
            a={"url": "https://a.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            b={"command": "x", "env": {"T": "${TOKEN}"}, "args": ["${TOKEN}"]},
            c={"command": "x", "env": {"T": "${MISSING}", "U": "${TOKEN}"}},
        ),
        environ,
    )
    with pytest.raises(UpstreamConfigError) as caught:
        parse_config(servers(d={"url": "${TOKEN}"}), environ)  # expands to a non-URL: reported without its value
    shown = [caplog.text, str(caught.value), repr(config), *map(repr, config.servers.values())]
    assert all(CANARY not in text for text in shown)
    assert config.redactor.redact(f"GET https://a.test/?k={CANARY}") == f"GET https://a.test/?k={MASK}"


def test_redacting_filter_masks_messages_args_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    redactor = Redactor([CANARY, "ab"])  # too short to mask: "ab" stays
    log = logging.getLogger("apcore_mcp.upstream.test_filter")
    log.addFilter(RedactingFilter(redactor))
    caplog.set_level(logging.DEBUG)
    log.info("token=%s ab", CANARY)
    try:
        raise RuntimeError(f"bad {CANARY}")
    except RuntimeError:
        log.exception("failed")
    assert CANARY not in caplog.text and "token=*** ab" in caplog.text and "details redacted" in caplog.text


def test_load_config_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(servers(s={"command": "x"})))
    assert list(load_config(path, {}).servers) == ["s"]
    path.write_text("{not json")
    with pytest.raises(UpstreamConfigError, match="is not JSON"):
        load_config(path, {})
    with pytest.raises(UpstreamConfigError, match="cannot be read"):
        load_config(tmp_path / "missing.json", {})


def test_the_example_config_is_valid() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "mcp.json"
    environ = {"GITHUB_TOKEN": "t" * 20, "HOME": "/home/u"}
    config = load_config(example, environ)
    assert list(config.servers) == ["files", "memory", "github"] and config.skipped == {"legacy-search": "disabled"}
    assert dict(config.servers["memory"].env) == {"MEMORY_FILE_PATH": "/tmp/apcore-mcp-memory.json"}
    assert config.toolset("notes").servers == ("files", "memory") and config.toolset("notes").tool_mode == "search"


# -- settings -----------------------------------------------------------------------------------


def test_upstream_settings_from_flags_and_environment(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "--extensions-dir",
            ".",
            "--mcp-config",
            "m.json",
            "--no-upstreams",
            "--strict-upstreams",
            "--tool-mode",
            "search",
        ]
    )
    assert (args.mcp_config, args.upstreams, args.strict_upstreams, args.tool_mode) == ("m.json", False, True, "search")
    settings, _ = settings_from_env({"APCORE_MCP_CONFIG": "m.json", "APCORE_MCP_UPSTREAM_LOG_DIR": str(tmp_path)})
    assert (settings.mcp_config, settings.upstream_log_dir) == ("m.json", str(tmp_path))


@pytest.mark.parametrize(
    ("field", "value"),
    [("mcp_config", " "), ("upstream_log_dir", ""), ("toolset", ""), ("tool_mode", "grep"), ("upstreams", "yes")],
)
def test_upstream_settings_are_checked(field: str, value: Any) -> None:
    with pytest.raises(SettingError) as caught:
        Settings(**{field: value})
    assert caught.value.field == field


def test_the_toolset_setting_under_its_old_name_scope(caplog: pytest.LogCaptureFixture) -> None:
    old_name: dict[str, Any] = {"mcp_config": "m.json", "scope": "work"}  # not in the signature: passed by name
    with pytest.warns(DeprecationWarning, match="scope is deprecated: it is now toolset"):
        settings = Settings(**old_name)
    assert settings.toolset == "work"
    with pytest.warns(DeprecationWarning, match="scope is deprecated"):
        assert settings.replace(scope="play").toolset == "play"
    both: dict[str, Any] = {"toolset": "a", "scope": "b"}
    with pytest.raises(SettingError, match="toolset and scope .* are both given") as caught:
        Settings(**both)
    assert caught.value.field == "toolset"

    with pytest.warns(DeprecationWarning, match="APCORE_MCP_SCOPE is deprecated: it is now APCORE_MCP_TOOLSET"):
        settings, _ = settings_from_env({"APCORE_MCP_CONFIG": "m.json", "APCORE_MCP_SCOPE": "work"})
    assert settings.toolset == "work" and "APCORE_MCP_SCOPE is deprecated" in caplog.text
    with pytest.raises(ValueError, match="APCORE_MCP_TOOLSET and APCORE_MCP_SCOPE .* are both given"):
        settings_from_env({"APCORE_MCP_TOOLSET": "a", "APCORE_MCP_SCOPE": "b"})
    assert settings_from_env({"APCORE_MCP_CONFIG": "m.json", "APCORE_MCP_TOOLSET": "a"})[0].toolset == "a"


def test_the_toolset_flag_under_its_old_name_scope() -> None:
    from apcore_mcp.run.cli import UsageError, _resolve

    new = build_parser().parse_args(["--toolset", "work"])
    assert _resolve(new, {})[0]["toolset"] == "work"
    with pytest.warns(DeprecationWarning, match="--scope is deprecated: it is now --toolset"):
        values, _ = _resolve(build_parser().parse_args(["--scope", "work"]), {})
    assert values["toolset"] == "work" and "scope" not in values
    with pytest.raises(UsageError, match="--toolset and --scope") as caught:
        _resolve(build_parser().parse_args(["--scope", "a", "--toolset", "b"]), {})
    assert caught.value.code == 1  # the CLI's exit status for it
    shown = build_parser().format_help()
    assert "[--scope" not in shown and "deprecated old name: --scope" in " ".join(shown.split())


def test_a_route_rule_on_the_old_toolset_paths_guards_the_new_ones() -> None:
    from apcore_mcp.http.auth import AuthPolicy

    rules = ("/scopes/team=team", "/scopesque=other", "/metrics=metrics:read")
    with pytest.warns(DeprecationWarning, match="path /scopes/team is deprecated: it is now /toolsets/team"):
        settings = Settings(auth="api-key", auth_api_keys=("a" * 64 + ":svc",), auth_route_scopes=rules)
    assert settings.auth_route_scopes == ("/toolsets/team=team", "/scopesque=other", "/metrics=metrics:read")
    required = AuthPolicy.for_settings(settings).required
    assert required({"path": "/toolsets/team/mcp", "headers": []}) == {"team"}


# -- module ids ---------------------------------------------------------------------------------


def test_valid_names_are_kept_and_others_made_valid_and_distinct() -> None:
    assert module_id("github", "create_issue") == "github.create_issue"
    ids = module_ids(server_segment("My-Server"), ["Get-File", "get_file", "9lives", "a.b", "x" * 300])
    assert ids["get_file"] == "my_server.get_file"  # a valid name is kept, beside one that maps to it
    assert ids["9lives"] == "my_server.t_9lives" and ids["a.b"] == "my_server.a_b"
    assert len(set(ids.values())) == len(ids)
    for value in ids.values():
        first, second = value.split(".")
        assert SEGMENT.match(first) and SEGMENT.match(second) and len(value) <= MAX_ID_LENGTH
    assert module_ids("my_server", ["Get-File"]) == {"Get-File": "my_server.get_file"}  # alone: no hash needed


def test_reserved_first_segments_and_clashes() -> None:
    assert server_segment("system") == "system_" and server_segment("core") == "core_"
    taken = {module_id("s", "echo")}
    assert module_ids("s", ["echo"], taken=taken) == {"echo": "s.echo_2"}


def test_server_spec_repr_shows_no_value() -> None:
    spec = ServerSpec(name="s", transport="stdio", command="run", env=(("T", CANARY),))
    assert CANARY not in repr(spec) and "'s'" in repr(spec)
