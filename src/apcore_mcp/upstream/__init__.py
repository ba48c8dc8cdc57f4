"""Upstream MCP servers mounted as apcore modules: config, shared handles, toolsets, reload.

Import from the submodules (this package imports nothing, so the call path, which needs only
``results``, does not load the client stack):

- ``mount``: ``mount_upstreams(registry, settings, environ)`` for a serving process,
  ``reload_upstreams``, ``watch_config``;
- ``config``: ``load_config`` / ``parse_config`` of ``mcp.json`` into ``ServerSpec`` / ``ToolsetSpec``;
- ``pool``: ``UpstreamPool`` and its ``Lease`` (shared, restarted, reaped servers);
- ``source``: ``UpstreamSource`` (one server's tools in a registry);
- ``openapi``: ``OpenApiSource`` (an HTTP API's operations in a registry: an ``openapi`` entry);
- ``toolsets``: ``UpstreamRuntime.apply`` (toolset switches, reloads) and ``toolset_filter``;
- ``pins``: ``PinKeeper`` (each tool held to its pinned definition) and the ``pins diff`` gate;
- ``results``: ``MCP_RESULT_KEY``, ``to_output``, ``mcp_result_of`` (a result across the Executor).
"""
