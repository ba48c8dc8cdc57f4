"""tasks.schedule: plan a task with reminders (async; returns dates and ids)."""

import asyncio
import uuid
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"


class Reminder(BaseModel):
    minutes_before: int = Field(ge=0, le=60 * 24 * 30, description="Minutes before the due time")
    channel: str = Field(default="email", description="Where to send the reminder")


class Assignee(BaseModel):
    name: str
    email: str = Field(json_schema_extra={"format": "email"})


class ScheduleInput(BaseModel):
    title: str = Field(min_length=1, max_length=200)
    due: datetime = Field(description="When the task is due (ISO 8601)")
    priority: Priority = Priority.normal
    assignee: Assignee | None = None
    reminders: list[Reminder] = Field(default_factory=list, description="When to remind the assignee")


class Task(BaseModel):
    id: uuid.UUID
    title: str
    due: datetime
    priority: Priority
    reminder_times: list[datetime]


class Schedule:
    description = "Schedule a task and compute when its reminders fire"
    documentation = "Creates a task in the (in-memory) planner. Reminders are computed from the due time."
    input_schema = ScheduleInput
    output_schema = Task
    tags: ClassVar[list[str]] = ["tasks"]
    annotations = ModuleAnnotations(readonly=False, idempotent=False, open_world=False)

    async def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        await asyncio.sleep(0)  # a real planner would write to storage here
        due = datetime.fromisoformat(str(inputs["due"]))
        reminders = [due - timedelta(minutes=r["minutes_before"]) for r in inputs.get("reminders", [])]
        return {
            "id": uuid.uuid4(),  # UUID and datetimes reach the client as strings
            "title": inputs["title"],
            "due": due,
            "priority": Priority(inputs.get("priority", "normal")),
            "reminder_times": sorted(reminders),
        }
