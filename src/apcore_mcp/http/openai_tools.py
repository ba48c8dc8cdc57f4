"""``GET /openai/tools``: the served tools as OpenAI tool definitions, for the caller asking.

The list follows the caller exactly as ``tools/list`` and the explorer's list do
(``ToolAccess.listed``): with ``auth_filter_tools`` only the tools it may call, so a tool hidden
from it is not named here either (nor in the Agents ``mcp`` form's ``allowed_tools``).
Query: ``format`` (``chat``, ``responses``, ``agents``), ``strict``, ``embed_annotations``,
``tags``, ``prefix``; for ``responses`` ``namespace_depth``, ``namespace_size``,
``defer_loading``; for ``agents`` ``form`` (``functions`` or ``mcp``: the ``mcp`` tool points at
this server's public ``/mcp`` URL). A bad query is a 400; an Agents list over 3 MiB a 422 (the
request is well formed, its answer cannot be used: 413 would blame a request body a GET lacks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.principal import identity_of
from apcore_mcp.calls.signin import MCP_RESOURCE, public_base
from apcore_mcp.openai import check_filters, render_records, select_records
from apcore_mcp.openai.agents import AgentsOptions, check_agents, server_label
from apcore_mcp.openai.formats import FORMATS, ResponsesOptions, check_format
from apcore_mcp.tools.records import ToolRecord

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_MAX_RENDERED = 64  # distinct (query, caller's list) pairs kept per catalog generation
NON_STRICT_HEADER = "X-OpenAI-Non-Strict"
"""Names the modules asked for strict but listed non-strict: ``name: reason; name: reason``."""
_PARAMETERS = (
    "strict",
    "embed_annotations",
    "tags",
    "prefix",
    "format",
    "namespace_depth",
    "namespace_size",
    "defer_loading",
    "form",
)

Rendered = tuple[int, bytes, dict[str, str]]


def openai_tools_route(bridge: Bridge) -> Route:
    """The route, with its cache of rendered bodies."""
    # Rendered bodies per query and caller's list, valid for one catalog generation (strict mode
    # on 1,000 tools costs ~50 ms to compute; a repeated GET then costs a dict lookup).
    rendered: dict[tuple[Any, ...], Rendered] = {}
    rendered_generation = -1
    agents_url = public_base(bridge.settings) + MCP_RESOURCE
    agents_label = server_label(bridge.settings.name)

    async def openai_tools(request: Request) -> Response:
        try:
            options = parse_openai_query(request, agents_url, agents_label)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        nonlocal rendered_generation
        generation = bridge.catalog.generation
        if generation != rendered_generation or len(rendered) >= _MAX_RENDERED:
            rendered.clear()
            rendered_generation = generation
        shown = bridge.access.listed(request.scope, identity_of(request.scope))
        records = tuple(record for record in bridge.catalog.records() if shown(record.name))
        key = (*options.values(), tuple(record.name for record in records))
        cached = rendered.get(key)
        if cached is None:
            cached = render_openai(records, options)
            if bridge.catalog.generation == generation:
                rendered[key] = cached
        status, body, headers = cached
        return Response(body, status_code=status, media_type="application/json", headers=headers)

    return Route("/openai/tools", openai_tools, methods=["GET"])


def parse_openai_query(request: Request, agents_url: str, agents_label: str) -> dict[str, Any]:
    """The route's options from the query (see the module docstring).

    Raises:
        ValueError: an unknown parameter or a bad value (the message names it).
    """
    query = request.query_params
    unknown = sorted(set(query) - set(_PARAMETERS))
    if unknown:
        raise ValueError(f"Unknown query parameter: {unknown[0]}")
    options: dict[str, Any] = {name: _flag(query.get(name), name) for name in ("strict", "embed_annotations")}
    tags = [tag for value in query.getlist("tags") for tag in value.split(",")] if "tags" in query else None
    prefix = query.get("prefix")
    check_filters(tags, prefix)
    defaults = ResponsesOptions()
    responses = ResponsesOptions(
        namespace_depth=_integer(query.get("namespace_depth"), "namespace_depth", defaults.namespace_depth),
        namespace_size=_integer(query.get("namespace_size"), "namespace_size", defaults.namespace_size),
        defer_loading=_flag(query.get("defer_loading"), "defer_loading"),
    )
    output_format = query.get("format", FORMATS[0])
    check_format(output_format, responses)
    agents = _agents_options(output_format, query.get("form"), agents_url, agents_label)
    check_agents(output_format, agents, strict=options["strict"], embed_annotations=options["embed_annotations"])
    options.update(tags=tuple(tags) if tags is not None else None, prefix=prefix)
    options.update(format=output_format, responses=responses, agents=agents)
    return options


def _agents_options(output_format: str, form: str | None, url: str, label: str) -> AgentsOptions:
    if output_format != "agents":
        if form is not None:
            raise ValueError("form exists only in format 'agents'")
        return AgentsOptions()
    if form == "mcp":
        return AgentsOptions("mcp", url, label)
    return AgentsOptions("functions" if form is None else form)


def render_openai(records: Sequence[ToolRecord], options: dict[str, Any]) -> Rendered:
    """Status, body and headers of ``/openai/tools`` for ``records`` and parsed ``options``."""
    selected = select_records(records, tags=options["tags"], prefix=options["prefix"])
    try:
        tools, functions = render_records(
            selected,
            options["format"],
            options["responses"],
            options["agents"],
            strict=options["strict"],
            embed_annotations=options["embed_annotations"],
        )
    except ValueError as exc:  # over the Agents API's 3 MiB: refused whole, never cut
        return 422, bytes(JSONResponse({"error": str(exc)}).body), {}
    body = bytes(JSONResponse(tools).body)
    reasons = [f"{function.name}: {function.non_strict_reason}" for function in functions if function.non_strict_reason]
    return 200, body, ({NON_STRICT_HEADER: "; ".join(reasons)} if reasons else {})


def _integer(value: str | None, name: str, default: int) -> int:
    if value is None:
        return default
    if not value.isdigit():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(value)


def _flag(value: str | None, name: str) -> bool:
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")
