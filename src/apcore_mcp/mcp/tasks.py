"""Tasks on the wire, in both protocol eras (the work itself is ``task_runs.TaskRunner``'s).

- **2026-07-28**: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663). A request whose
  ``clientCapabilities.extensions`` names it gets a ``CreateTaskResult`` (``resultType: "task"``,
  flat) for a task-supporting tool; ``tasks/get`` inlines the result or error once terminal;
  ``tasks/update`` and ``tasks/cancel`` answer an empty ack. Without the extension the tasks
  methods answer -32021 and ``required`` tools too; ``optional`` ones run as plain calls.
- **2025-11-25**: the core (experimental) tasks: ``capabilities.tasks``, ``execution.taskSupport``
  on tools, a ``task`` param on ``tools/call`` answered with ``{task: {...}}``, ``tasks/get``,
  ``tasks/result`` (waits for the end) and ``tasks/cancel``.

A task belongs to the caller key that started it and to a tool the caller may still call:
to anyone else, and once the caller lost the tool's scope, it does not exist (-32602).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import Field

from apcore_mcp.calls.context import CallContext
from apcore_mcp.calls.limits import principal_key
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.mcp.edge import Edge, http_scope
from apcore_mcp.mcp.peer import is_modern
from apcore_mcp.tasks.records import (
    TASKS_EXTENSION,
    TaskRecord,
    TaskStoreFull,
    TaskStoreUnavailable,
    iso,
    requested_ttl,
    task_support,
)
from apcore_mcp.tasks.runner import TaskRunner
from apcore_mcp.tools.catalog import ToolCatalog

RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
NOT_FOUND = "Task not found"
RESULT_LOOK_SECONDS = 2.0
"""How often a ``tasks/result`` waiter looks at its task anyway: a lapsed lease, an expiry, a lost end message."""


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId", min_length=1, max_length=128)


class TaskUpdateParams(TaskParams):
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


def _extension_declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and TASKS_EXTENSION in (capabilities.extensions or {})


def _missing_extension() -> MCPError:
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"This request needs the client to declare the {TASKS_EXTENSION} extension",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _check_name_header(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """2026-07-28 over HTTP: ``Mcp-Name`` carries the task id (SEP-2663 routing headers, SEP-2243 rules)."""
    scope = http_scope(ctx)
    if scope is None or not is_modern(ctx):
        return
    values = [value for key, value in scope.get("headers", []) if key == b"mcp-name"]
    if len(values) != 1 or values[0].decode("latin-1").strip() != task_id:
        raise MCPError(code=types.HEADER_MISMATCH, message="Mcp-Name header must carry the request's taskId")


def task_fields(record: TaskRecord, *, modern: bool) -> dict[str, Any]:
    """The ``Task`` object of an era (2026-07-28 spells durations ``ttlMs``/``pollIntervalMs``)."""
    fields: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso(record.created_at),
        "lastUpdatedAt": iso(record.updated_at),
    }
    if record.status_message is not None:
        fields["statusMessage"] = record.status_message
    if modern:
        fields.update(ttlMs=record.ttl_ms, pollIntervalMs=record.poll_ms)
    else:
        fields.update(ttl=record.ttl_ms, pollInterval=record.poll_ms)
    return fields


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """2026-07-28 ``tasks/get``: the task, with its result or error inlined once it ended."""
    answer = {"resultType": "complete", **task_fields(record, modern=True)}
    if record.status == "completed" and record.result is not None:
        answer["result"] = {"resultType": "complete", **record.result}
    elif record.status == "failed" and record.error is not None:
        answer["error"] = record.error
    return answer


def _requested_ttl(params: Mapping[str, Any], *, modern: bool) -> int | None:
    """The retention a ``tools/call`` asks for: 2025-11-25's ``task.ttl`` (the 2026-07-28 extension
    has the server choose it, so a modern request's ``task`` is not read); -32602 unless a positive integer."""
    if modern:
        return None
    try:
        return requested_ttl(params.get("task", {}).get("ttl"))
    except ValueError as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None


class TaskEndpoints:
    """The ``tools/call`` middleware that starts tasks, and the ``tasks/*`` handlers."""

    def __init__(self, catalog: ToolCatalog, runner: TaskRunner, edge: Edge) -> None:
        self.catalog = catalog
        self.runner = runner
        self.edge = edge

    def install(self, server: Any) -> None:
        server.add_request_handler("tasks/get", TaskParams, self.get)
        server.add_request_handler("tasks/update", TaskUpdateParams, self.update)
        server.add_request_handler("tasks/cancel", TaskParams, self.cancel)
        server.add_request_handler("tasks/result", TaskParams, self.result)
        server.middleware.append(self)  # innermost: tools/list answers are cached with the stamp

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            return await self._call(ctx, call_next)
        if ctx.method == "tools/list" and not is_modern(ctx):
            return self._stamp_execution(await call_next(ctx))
        return await call_next(ctx)

    def _stamp_execution(self, result: HandlerResult) -> HandlerResult:
        """2025-11-25 tools carry ``execution.taskSupport`` (the 2026 wire has no such field)."""
        if not isinstance(result, dict):
            return result
        for tool in result.get("tools", []):
            record = self.catalog.get(tool.get("name", ""))
            support = task_support(record.annotations) if record is not None else "forbidden"
            if support != "forbidden":
                tool["execution"] = {"taskSupport": support}
        return result

    async def _call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        name = params.get("name")
        record = self.catalog.get(name) if isinstance(name, str) else None
        support = task_support(record.annotations) if record is not None else "forbidden"
        call = self.edge.call_context(ctx) if support != "forbidden" else None
        if call is not None and self.runner.router.authorization.hides(str(name), call):
            support = "forbidden"  # a hidden tool goes where an absent one does: no task answer tells it exists
        modern = is_modern(ctx)
        asked = _extension_declared(ctx) if modern else isinstance(params.get("task"), dict)
        if support == "forbidden":
            if asked and not modern:
                raise MCPError(code=types.METHOD_NOT_FOUND, message=f"Tool {name} does not run as a task")
            return await call_next(ctx)
        if not asked:
            if support == "optional":
                return await call_next(ctx)
            if modern:
                raise _missing_extension()
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"Tool {name} runs only as a task")
        assert isinstance(name, str)
        assert call is not None
        if self.runner.router.authorization.check(name, call) is not None:
            return await call_next(ctx)  # refused as any call of it is
        task = await self._start(name, params.get("arguments"), call, _requested_ttl(params, modern=modern))
        if modern:
            return {"resultType": "task", **task_fields(task, modern=True)}
        return {"task": task_fields(task, modern=False)}

    async def _start(self, name: str, arguments: Any, call: CallContext, ttl: int | None) -> TaskRecord:
        if arguments is not None and not isinstance(arguments, dict):
            raise MCPError(code=types.INVALID_PARAMS, message="arguments must be an object")
        try:
            return await self.runner.start(name, arguments, call, ttl_ms=ttl)
        except TaskStoreFull as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"Task not started: {exc}") from None
        except TaskStoreUnavailable:
            raise MCPError(code=types.INTERNAL_ERROR, message="Task not started: task store unreachable") from None
        except RuntimeError:  # the server's service is not running (a bare Bridge, not served)
            raise MCPError(code=types.INTERNAL_ERROR, message="Task not started: tasks are not served here") from None

    async def _find(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskRecord:
        """The caller's task, or -32602 as for a task that never existed."""
        if is_modern(ctx) and not _extension_declared(ctx):
            raise _missing_extension()
        _check_name_header(ctx, task_id)
        scope = http_scope(ctx)
        caller = principal_key(scope)
        try:
            record = await self.runner.get(task_id, caller)
        except TaskStoreUnavailable:
            raise MCPError(code=types.INTERNAL_ERROR, message="The task store is unreachable") from None
        if record is not None:
            asker = CallContext(principal=principal_of(scope), caller=caller)
            if self.runner.router.authorization.denial(record.tool, asker.scopes) is None:
                return record
        raise MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND)

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        record = await self._find(ctx, params.task_id)
        return detailed_task(record) if is_modern(ctx) else task_fields(record, modern=False)

    async def update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> HandlerResult:
        if not is_modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data="tasks/update")
        await self._find(ctx, params.task_id)  # no task of ours waits for input: nothing to deliver
        return {"resultType": "complete"}

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        record = await self._find(ctx, params.task_id)
        modern = is_modern(ctx)
        if record.terminal and not modern:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Cannot cancel a task that is {record.status}")
        try:
            await self.runner.cancel(record)
        except TaskStoreUnavailable:
            raise MCPError(code=types.INTERNAL_ERROR, message="The task store is unreachable") from None
        return {"resultType": "complete"} if modern else task_fields(record, modern=False)

    async def result(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        """2025-11-25 only: wait for the end (bounded by the task's retention), then its result."""
        if is_modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data="tasks/result")
        while True:  # ends: a record is gone (not found) once its retention passed
            with self.runner.end_of(params.task_id) as ended:  # woken by the task's end, not by polling
                record = await self._find(ctx, params.task_id)
                if record.terminal:
                    break
                with anyio.move_on_after(RESULT_LOOK_SECONDS):
                    await ended.wait()
        related = {RELATED_TASK_KEY: {"taskId": record.task_id}}
        if record.status == "completed" and record.result is not None:
            return {**record.result, "_meta": {**(record.result.get("_meta") or {}), **related}}
        message = record.status_message or record.status
        raise MCPError(code=types.INTERNAL_ERROR, message=f"Task {record.status}: {message}", data=related)
