"""A third-party stdio MCP server offering skills (SEP-2640), on the SDK's low-level ``Server`` only.

``python tests/upstreams/skills_server.py SPEC.json`` advertises ``io.modelcontextprotocol/skills``
and serves ``skills/list``, ``skills/get`` and the ``skill://`` files with ``resources/read``.
The spec file is read again at each request, so a test changes what the server offers by
rewriting it (then calls the ``announce`` tool, which says the tool list changed)::

    {"tools": ["search", "purge"],
     "skills": [{"path": "pdf", "files": {"SKILL.md": "---\\nname: pdf\\n...", "ref/FORMS.md": "..."},
                 "listed": {"SKILL.md": {"digest": "sha256:...", "size": 12}},
                 "frontmatter": {...}}]}

``listed`` overrides what the listing says of a file (a lying digest or size) and
``frontmatter`` what it says of the skill, without changing the bytes served. A ``"log"`` path
gets one line per skills request the server answers (its method).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import yaml
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SKILLS = "io.modelcontextprotocol/skills"


class UriParams(types.RequestParams):
    uri: str


class CursorParams(types.RequestParams):
    cursor: str | None = None


class SkillsUpstream:
    def __init__(self, spec_path: Path) -> None:
        self.spec_path = spec_path
        self.bus = InMemorySubscriptionBus()

    def spec(self) -> dict[str, Any]:
        return dict(json.loads(self.spec_path.read_text(encoding="utf-8")))

    def entries(self) -> list[dict[str, Any]]:
        return [entry(skill) for skill in self.spec().get("skills", [])]

    def file(self, uri: str) -> str | None:
        for skill in self.spec().get("skills", []):
            for path, text in skill["files"].items():
                if uri == f"skill://{skill['path']}/{path}":
                    return str(text)
        return None

    async def list_tools(self, _ctx: Any, _params: Any) -> types.ListToolsResult:
        names = [*self.spec().get("tools", []), "announce"]
        schema = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[types.Tool(name=n, description=f"Tool {n}", input_schema=schema) for n in names]
        )

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "announce":
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await ctx.session.send_tool_list_changed()
            await self.bus.publish(ToolsListChanged())
        return types.CallToolResult(content=[types.TextContent(text=params.name)])

    def note(self, method: str) -> None:
        log = self.spec().get("log")
        if log:
            with Path(log).open("a", encoding="utf-8") as file:
                file.write(method + "\n")

    async def skills_list(self, _ctx: Any, _params: CursorParams) -> dict[str, Any]:
        self.note("skills/list")
        return {"skills": self.entries(), "ttlMs": 0, "cacheScope": "private"}

    async def skills_get(self, _ctx: Any, params: UriParams) -> dict[str, Any]:
        for found in self.entries():
            if found["uri"] == params.uri:
                return {"skill": found, "ttlMs": 0, "cacheScope": "private"}
        raise MCPError(code=types.INVALID_PARAMS, message=f"no skill {params.uri}")

    async def read_resource(self, _ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = self.file(str(params.uri))
        if text is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no resource {params.uri}")
        mime = "text/markdown" if str(params.uri).endswith(".md") else "text/plain"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)]
        )


def entry(skill: dict[str, Any]) -> dict[str, Any]:
    """The listing entry of ``skill``: what its files are, unless ``listed``/``frontmatter`` say otherwise."""
    root = f"skill://{skill['path']}/"
    resources = []
    for path, text in skill["files"].items():
        data = text.encode("utf-8")
        listed = {"uri": root + path, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
        listed.update(skill.get("listed", {}).get(path, {}))
        resources.append(listed)
    skill_md = skill["files"].get("SKILL.md", "---\n{}\n---\n")
    frontmatter = skill.get("frontmatter") or yaml.safe_load(skill_md.split("---")[1])
    return {"uri": root + "SKILL.md", "frontmatter": frontmatter, "resources": resources}


def build(spec_path: Path) -> Server[Any]:
    state = SkillsUpstream(spec_path)
    server: Server[Any] = Server(
        "skills-upstream",
        version="1.0",
        on_list_tools=state.list_tools,
        on_call_tool=state.call_tool,
        on_read_resource=state.read_resource,
        on_subscriptions_listen=ListenHandler(state.bus),
    )
    server.add_request_handler("skills/list", CursorParams, state.skills_list)
    server.add_request_handler("skills/get", UriParams, state.skills_get)
    server.extensions[SKILLS] = {}
    return server


async def serve(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    asyncio.run(serve(build(Path(sys.argv[1]))))
