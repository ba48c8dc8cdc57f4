"""``prompts/list``, ``prompts/get`` (asking the user for a prompt's inputs first) and ``completion/complete``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.calls.context import InputRequired
from apcore_mcp.mcp.edge import Edge
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.mcp.resources import MAX_COMPLETIONS, ResourceHandlers
from apcore_mcp.mcp.results import complete, input_required_result
from apcore_mcp.tools.prompts import Prompt, complete_argument


class PromptHandlers:
    def __init__(self, prompts: Mapping[str, Prompt], edge: Edge, resources: ResourceHandlers) -> None:
        self.prompts = dict(prompts)
        self.edge = edge
        self.resources = resources

    async def list_prompts(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=prompt.name,
                    description=prompt.description,
                    arguments=[
                        types.PromptArgument(name=arg.name, description=arg.description, required=arg.required)
                        for arg in prompt.arguments
                    ],
                )
                for prompt in self.prompts.values()
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> HandlerResult:
        prompt = self.prompts.get(params.name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"Prompt not found: {params.name}", data={"name": params.name})
        arguments = dict(params.arguments or {})
        missing = prompt.missing_arguments(arguments)
        if missing:
            raise MCPError(
                types.INVALID_PARAMS, f"Missing required argument: {missing[0]}", data={"argument": missing[0]}
            )
        answers: dict[str, Mapping[str, Any]] = {}
        if prompt.inputs:
            call = self.edge.call_context(
                ctx, request_state=params.request_state, input_responses=params.input_responses
            )
            requests = {
                item.key: {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": item.message, "requestedSchema": item.schema},
                }
                for item in prompt.inputs
            }
            try:
                results = await call.request_inputs(requests)
            except InputRequired as question:
                return input_required_result(question)
            for key, answer in results.items():
                content = answer.get("content") if answer is not None and answer.get("action") == "accept" else None
                answers[key] = content if isinstance(content, Mapping) else {}
        rendered: dict[str, Any] = {"messages": prompt.render(arguments, answers)}
        if prompt.description:
            rendered["description"] = prompt.description
        return complete(rendered, modern=is_modern(ctx))

    async def complete(
        self, _ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref, argument = params.ref, params.argument
        values: list[str] = []
        if isinstance(ref, types.PromptReference):
            prompt = self.prompts.get(ref.name)
            if prompt is not None:
                values = complete_argument(prompt, argument.name, argument.value)
        elif isinstance(ref, types.ResourceTemplateReference):
            values = self.resources.complete(ref.uri, argument.name, argument.value)
        return types.CompleteResult(
            completion=types.Completion(
                values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS
            )
        )
