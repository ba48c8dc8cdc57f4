"""Toolset switches and reloads, by PID: exactly the changed servers stop and start, the rest keep running."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from apcore import Context, Executor, Identity, Registry

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.config.parse import parse_config
from apcore_mcp.upstream.errors import UpstreamsDisabled
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.toolsets import UpstreamRuntime, toolset_filter, upstream_server_of

from tests._support.modules import make_registry
from tests._support.upstreams import gone, mounted, pid_of, stdio_entry, upstream_children


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert upstream_children() == {}


def config(toolsets: dict[str, Any] | None = None, **entries: Any) -> Any:
    return parse_config({"mcpServers": entries, "toolsets": toolsets or {}}, {})


THREE = {"a": stdio_entry(), "b": stdio_entry(), "c": stdio_entry()}
TOOLSETS = {"one": {"servers": ["a"]}, "two": {"servers": "b, c"}, "ab": {"servers": ["a", "b"]}, "none": {}}


async def pids(executor: Any, runtime: UpstreamRuntime) -> dict[str, int]:
    return {name: await pid_of(executor, f"{name}.pid") for name in sorted(runtime.sources)}


async def test_toolset_switches_stop_and_start_exactly_the_difference() -> None:
    executor = Executor(Registry())
    async with UpstreamPool() as pool:
        runtime = UpstreamRuntime(executor.registry, pool)
        cfg = config(TOOLSETS, **THREE)
        await runtime.apply(cfg, ["one"])
        first = await pids(executor, runtime)
        assert set(first) == {"a"} and set(upstream_children()) == set(first.values())

        switch = await runtime.apply(cfg, ["two"])
        assert (switch.stopped, sorted(switch.started), switch.kept) == (["a"], ["b", "c"], [])
        second = await pids(executor, runtime)
        assert gone(first["a"]) and set(upstream_children()) == set(second.values())
        assert not executor.registry.list(prefix="a.")

        switch = await runtime.apply(cfg, ["ab"])
        assert (switch.stopped, switch.started, switch.kept) == (["c"], ["a"], ["b"])
        third = await pids(executor, runtime)
        assert third["b"] == second["b"] and gone(second["c"]) and third["a"] != first["a"]

        switch = await runtime.apply(cfg, ["none"])
        assert sorted(switch.stopped) == ["a", "b"] and upstream_children() == {}
        assert not [module for module in executor.registry.list() if upstream_server_of(executor.registry, module)]


async def test_nested_toolsets_leave_the_outer_servers_running() -> None:
    executor = Executor(Registry())
    toolsets = {"global": {"servers": ["a"]}, "role": {"servers": ["b"]}, "agent": {"servers": ["a", "c"]}}
    async with UpstreamPool() as pool:
        runtime = UpstreamRuntime(executor.registry, pool)
        cfg = config(toolsets, **THREE)
        await runtime.apply(cfg, ["global"])
        outer = await pid_of(executor, "a.pid")
        await runtime.apply(cfg, ["global", "role"])  # a child toolset on top: the parent's server is untouched
        assert await pid_of(executor, "a.pid") == outer and set(runtime.sources) == {"a", "b"}
        await runtime.apply(cfg, ["global"])  # the child exits
        assert await pid_of(executor, "a.pid") == outer and set(runtime.sources) == {"a"}
        await runtime.apply(cfg, ["agent"])  # a toolset sharing a server with the one it replaces
        assert await pid_of(executor, "a.pid") == outer and set(runtime.sources) == {"a", "c"}
        await runtime.close()
        assert gone(outer)


async def test_a_reload_restarts_only_the_servers_whose_spec_changed() -> None:
    executor = Executor(Registry())
    async with UpstreamPool() as pool:
        runtime = UpstreamRuntime(executor.registry, pool)
        await runtime.apply(config(**THREE))
        before = await pids(executor, runtime)
        lease = runtime.sources["a"]._lease
        assert lease is not None
        kept_connection = await lease.connection()
        changed = {"a": stdio_entry(timeout=7), "b": stdio_entry("--tools", "1"), "d": stdio_entry()}
        switch = await runtime.apply(config(**changed))
        assert (sorted(switch.stopped), sorted(switch.started), switch.kept) == (["b", "c"], ["b", "d"], ["a"])
        after = await pids(executor, runtime)
        assert after["a"] == before["a"] and runtime.sources["a"].spec.timeout == 7
        lease = runtime.sources["a"]._lease
        assert lease is not None and await lease.connection() is kept_connection
        assert after["b"] != before["b"] and gone(before["b"]) and gone(before["c"])
        assert set(upstream_children()) == set(after.values())
        assert executor.registry.has("b.gen_000") and not executor.registry.list(prefix="c.")
        await runtime.close()


async def test_handles_are_shared_across_runtimes_of_one_pool() -> None:
    first, second = Executor(Registry()), Executor(Registry())
    async with UpstreamPool() as pool:
        one, two = UpstreamRuntime(first.registry, pool), UpstreamRuntime(second.registry, pool)
        cfg = config(a=stdio_entry())
        await one.apply(cfg)
        await two.apply(cfg)
        shared = await pid_of(first, "a.pid")
        assert await pid_of(second, "a.pid") == shared and len(upstream_children()) == 1
        await one.close()
        assert await pid_of(second, "a.pid") == shared
        await two.close()
        assert gone(shared)


async def test_with_upstreams_off_nothing_starts_and_a_toolset_naming_servers_fails() -> None:
    executor = Executor(Registry())
    cfg = config({"work": {"servers": ["a", "b"]}, "local": {"modules": True}}, **THREE)
    async with UpstreamPool() as pool:
        runtime = UpstreamRuntime(executor.registry, pool, enabled=False)
        assert (await runtime.apply(cfg)).started == []  # the implicit default toolset: nothing to refuse
        assert (await runtime.apply(cfg, ["local"])).started == []
        with pytest.raises(UpstreamsDisabled, match=r"toolset 'work' needs upstream servers \(a, b\) but upstream"):
            await runtime.apply(cfg, ["work"])
        assert upstream_children() == {} and runtime.sources == {}


async def test_sharing_policies_key_the_server_per_principal() -> None:
    data = {"mcpServers": {"own": stdio_entry(sharing="per-principal"), "all": stdio_entry()}}
    async with mounted(data) as mount:

        def as_user(name: str | None) -> Context:
            return Context.create(identity=Identity(id=name) if name else None)

        alice, again, bob, nobody = [
            await pid_of(mount.executor, "own.pid", as_user(name)) for name in ("alice", "alice", "bob", None)
        ]
        assert alice == again and len({alice, bob, nobody}) == 3
        shared = {await pid_of(mount.executor, "all.pid", as_user(name)) for name in ("alice", "bob")}
        assert len(shared) == 1
        assert len(upstream_children()) == 5  # own: listing + alice + bob + anonymous; all: one


async def test_a_toolset_serves_its_servers_tools_and_the_local_modules_it_selects() -> None:
    registry = make_registry()
    executor = Executor(registry)
    data = {
        "mcpServers": {"a": stdio_entry(), "b": stdio_entry()},
        "toolsets": {
            "pub": {"servers": ["a"], "modules": {"tags": ["public"]}},
            "bare": {"servers": ["b"], "modules": False},
        },
    }
    async with mounted(data, executor=executor, toolsets=("pub", "bare")) as mount:
        cfg = mount.runtime.config
        pub = Bridge.build(executor, Settings(dynamic=True), include=toolset_filter(registry, cfg.toolset("pub")))
        bare = Bridge.build(executor, Settings(), include=toolset_filter(registry, cfg.toolset("bare")))
        async with BridgeService(pub):  # pub follows the registry, through its own selection
            pub_names = {record.name for record in pub.catalog.records()}
            bare_names = {record.name for record in bare.catalog.records()}
            local_public = set(registry.list(tags=["public"]))
            assert pub_names == local_public | {name for name in registry.list(prefix="a.")}
            assert bare_names == set(registry.list(prefix="b."))
            await mount.executor.call_async("b.grow", {"name": "extra"}, Context.create())
            await mount.runtime.sources["b"].refresh()
            assert registry.has("b.extra") and pub.catalog.get("b.extra") is None  # another toolset's change


def test_principal_keys_follow_the_sharing_policy() -> None:
    from apcore_mcp.calls.context import CallContext
    from apcore_mcp.upstream.source import principal_of

    alice = Context.create(identity=Identity(id="alice"))
    assert principal_of(alice, "shared") is None
    assert principal_of(alice, "per-principal") == "principal:alice"
    assert principal_of(Context.create(), "per-principal") == "principal:anonymous"
    # No session id from the edge (stateless, or not provided yet): the principal, never a shared handle.
    call = CallContext(identity=Identity(id="bob")).to_apcore()
    assert principal_of(call, "per-session") == "principal:bob"
