"""Long-running modules for the task tests, a tasks client for the SDK's ``mcp.Client``, and the wire by hand.

The SDK client has no tasks of its own: ``TasksClient`` is a ``ClientExtension`` (its public
extension interface) that declares ``io.modelcontextprotocol/tasks``, claims the
``resultType: "task"`` answer of ``tools/call`` and polls ``tasks/get`` until the task ends,
so ``client.call_tool`` returns the tool's result as for any call. 2025-11-25 tasks are not
reachable through the SDK client (it checks a ``tools/call`` answer is a ``CallToolResult``),
so ``Wire`` speaks JSON-RPC over Streamable HTTP by hand for both eras.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import mcp.types as types
from apcore import ModuleAnnotations, Registry
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import BaseModel, ConfigDict, Field

from apcore_mcp import report_progress
from apcore_mcp.tasks.records import TASKS_EXTENSION, TaskRecord, TaskStore

from tests._support.modules import make_executor, module_of

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
POLL_LIMIT_S = 20.0


@dataclass
class Seen:
    """What the task modules saw: cancellations, starts, finishes (a test's own instance)."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: list[bool] = field(default_factory=list)
    finished: int = 0


class StepsIn(BaseModel):
    steps: int = Field(default=3, ge=0, le=1000)
    delay: float = Field(default=0.05, ge=0, le=30)


class DoneOut(BaseModel):
    done: int


class Steps:
    """Sleeps ``delay`` per step and reports progress after each; notes whether it saw its cancellation."""

    description = "Steps"
    input_schema = StepsIn
    output_schema = DoneOut

    def __init__(self, seen: Seen, annotations: ModuleAnnotations) -> None:
        self.seen = seen
        self.annotations = annotations

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        steps, delay = inputs.get("steps", 3), inputs.get("delay", 0.05)
        self.seen.started.set()
        try:
            for step in range(1, steps + 1):
                await asyncio.sleep(delay)
                await report_progress(context, step, steps, f"step {step}")
        except asyncio.CancelledError:
            self.seen.cancelled.append(context.cancel_token.is_cancelled)
            raise
        self.seen.finished += 1
        return {"done": steps}


def task_modules(seen: Seen) -> dict[str, Any]:
    """``jobs.steps`` (optional task: progress per step), ``jobs.quick`` (required), ``jobs.fails``,
    ``jobs.gated`` (needs approval), ``jobs.big`` (``size`` bytes out), ``jobs.plain`` (no task)."""

    def quick(text: str) -> dict[str, Any]:
        return {"text": text.upper()}

    def fails() -> dict[str, Any]:
        raise ValueError("the job failed on purpose")

    def gated() -> dict[str, Any]:
        seen.finished += 1
        return {"ran": True}

    def big(size: int) -> dict[str, Any]:
        return {"blob": "x" * size}

    def plain(name: str) -> dict[str, Any]:
        return {"greeting": f"Hello, {name}!"}

    def marked(support: str, **more: Any) -> ModuleAnnotations:
        return ModuleAnnotations(extra={"mcp.task_support": support}, **more)

    return {
        "jobs.steps": Steps(seen, marked("optional")),
        "jobs.quick": module_of(quick, annotations=marked("required"), description="Quick"),
        "jobs.fails": module_of(fails, annotations=marked("optional"), description="Fails"),
        "jobs.gated": module_of(gated, annotations=marked("optional", requires_approval=True), description="Gated"),
        "jobs.big": module_of(big, annotations=marked("optional"), description="Big"),
        "jobs.plain": module_of(plain, description="Plain"),
    }


def task_registry(seen: Seen) -> Registry:
    registry = Registry()
    for name, module in task_modules(seen).items():
        registry.register(name, module)
    return registry


def task_executor(seen: Seen) -> Any:
    return make_executor(task_registry(seen))


def gate_executor(gate: asyncio.Event) -> Any:
    """``jobs.gate`` (optional task): waits until the test sets ``gate``, then returns ``{"opened": true}``."""

    async def gate_job() -> dict[str, Any]:
        await gate.wait()
        return {"opened": True}

    registry = Registry()
    annotations = ModuleAnnotations(extra={"mcp.task_support": "optional"})
    registry.register("jobs.gate", module_of(gate_job, annotations=annotations, description="Gate"))
    return make_executor(registry)


class CountingStore:
    """A ``TaskStore`` counting its reads (``get``), everything else done by ``store``."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.shared = store.shared
        self.reads = 0

    async def get(self, task_id: str) -> TaskRecord | None:
        self.reads += 1
        return await self.store.get(task_id)

    async def create(self, record: TaskRecord) -> None:
        await self.store.create(record)

    async def put(self, record: TaskRecord) -> None:
        await self.store.put(record)

    async def finish(self, record: TaskRecord) -> None:
        await self.store.finish(record)

    async def watch_ends(self, on_end: Callable[[str], None]) -> None:
        await self.store.watch_ends(on_end)

    async def request_cancel(self, task_id: str) -> None:
        await self.store.request_cancel(task_id)

    async def cancel_requested(self, task_id: str) -> bool:
        return await self.store.cancel_requested(task_id)


# -- the SDK client, with a tasks extension ---------------------------------------------------


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class TaskMethod(types.Request[TaskIdParams, str]):
    name_param = "taskId"


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


class CreatedTask(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


async def task_request(session: Any, method: str, task_id: str) -> dict[str, Any]:
    """``tasks/get``/``tasks/cancel``/``tasks/update`` through the SDK session (its 2026 envelope stamped)."""
    request = TaskMethod(method=method, params=TaskIdParams(taskId=task_id))
    result = await session.send_request(request, AnyResult)
    return dict(result.model_dump(by_alias=True, exclude_none=True))


class TasksClient(ClientExtension):
    """Declares the tasks extension and finishes a task answer by polling ``tasks/get`` (bounded)."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.polled: list[dict[str, Any]] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created.model_dump(by_alias=True, exclude_none=True))
        async with asyncio.timeout(POLL_LIMIT_S):
            while True:
                state = await task_request(ctx.session, "tasks/get", created.task_id)
                self.polled.append(state)
                if state["status"] in ("completed", "failed", "cancelled"):
                    break
                await asyncio.sleep(min(0.05, state.get("pollIntervalMs", 50) / 1000))
        if state["status"] != "completed":
            message = state.get("error", {}).get("message", state["status"])
            return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
        return types.CallToolResult.model_validate(state["result"])


# -- the wire by hand ----------------------------------------------------------------------------


def envelope(*, tasks: bool = True) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


def _message(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = response.text.splitlines()
        messages = [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()]
        return next(m for m in messages if "id" in m and ("result" in m or "error" in m))
    return dict(response.json())


@dataclass
class Wire:
    """JSON-RPC to ``{base}/mcp`` in one era, from one client address (``127.0.0.x``: a distinct caller)."""

    base: str
    era: str = MODERN
    source: str = "127.0.0.1"
    tasks: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    session: str | None = None
    _ids: int = 0

    def _client(self) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(local_address=self.source)
        return httpx.AsyncClient(transport=transport, timeout=POLL_LIMIT_S)

    async def open(self) -> dict[str, Any]:
        """Handshake era: ``initialize`` (and ``initialized``); the server's capabilities."""
        answer = await self.rpc(
            "initialize",
            {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, "notifications/initialized")
        return dict(answer["result"]["capabilities"])

    async def rpc(self, method: str, params: dict[str, Any] | None = None, name: str | None = None) -> dict[str, Any]:
        """One request; the JSON-RPC response (``result`` or ``error``)."""
        self._ids += 1
        params = dict(params or {})
        if self.era == MODERN:
            params["_meta"] = {**envelope(tasks=self.tasks), **params.get("_meta", {})}
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        name = name or params.get("name") or params.get("taskId")
        response = await self._post(body, method, name)
        if method == "initialize":
            self.session = response.headers.get("mcp-session-id")
        return _message(response)

    async def _post(self, body: dict[str, Any], method: str, name: str | None = None) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream", "Mcp-Method": method, **self.headers}
        if self.era == MODERN:
            headers["MCP-Protocol-Version"] = MODERN
        elif self.session is not None:
            headers.update({"MCP-Protocol-Version": HANDSHAKE, "Mcp-Session-Id": self.session})
        if name is not None:
            headers["Mcp-Name"] = name
        async with self._client() as client:
            return await client.post(f"{self.base}/mcp", json=body, headers=headers)

    async def call(self, name: str, arguments: dict[str, Any], **more: Any) -> dict[str, Any]:
        return await self.rpc("tools/call", {"name": name, "arguments": arguments, **more})

    async def until_done(self, task_id: str) -> dict[str, Any]:
        """``tasks/get`` until the task ended (bounded); its last answer."""
        async with asyncio.timeout(POLL_LIMIT_S):
            while True:
                answer = await self.rpc("tasks/get", {"taskId": task_id})
                state = answer.get("result", {})
                if "error" in answer or state.get("status") in ("completed", "failed", "cancelled"):
                    return answer
                await asyncio.sleep(0.03)
