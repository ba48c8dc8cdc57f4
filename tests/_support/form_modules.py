"""Modules whose input schemas exercise the explorer's form engine (tests/http/explorer/test_explorer_forms_browser.py).

``forms.order`` has an array of objects, a nested optional object, enums (one written as
``oneOf`` consts with titles), a date-time, an email, numbers with bounds and a pattern. Every
module records the arguments it received in ``RECEIVED`` (the server runs in the test's process),
so a test checks what the module got, not what the page thinks it sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from apcore import Registry
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from tests._support.interactive import Media
from tests._support.modules import Echo

RECEIVED: list[tuple[str, dict[str, Any]]] = []
"""(tool, arguments) per call, in order, as the modules received them."""


def _plain(value: Any) -> Any:
    """The arguments as JSON would carry them (datetimes as ISO strings), for comparing and echoing."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return value


class Line(BaseModel):
    name: str = Field(min_length=1, description="What to send")
    qty: int = Field(default=1, ge=1, le=99)


class Address(BaseModel):
    street: str
    city: str
    zip: str | None = Field(default=None, pattern=r"^\d{5}$", examples=["12345"])


class OrderIn(BaseModel):
    customer: str = Field(min_length=2, description="Who orders")
    items: list[Line] = Field(min_length=1)
    priority: Literal["low", "normal", "high"]
    size: Literal["s", "m", "l"] = Field(
        default="m",
        json_schema_extra={
            "oneOf": [
                {"const": "s", "title": "Small"},
                {"const": "m", "title": "Medium"},
                {"const": "l", "title": "Large"},
            ]
        },
    )
    deliver_at: datetime
    shipping: Address | None = None
    gift: bool = False
    contact: str | None = Field(default=None, json_schema_extra={"format": "email"})

    @field_validator("customer")
    @classmethod
    def known_customer(cls, value: str) -> str:
        # A rule only the server knows: the page shows its answer beside the field.
        if value == "nobody":
            raise ValueError("nobody cannot order")
        return value


class Order:
    description = "Takes an order and returns the arguments it received"
    input_schema = OrderIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        received = _plain(dict(inputs))
        RECEIVED.append(("forms.order", received))
        return {"received": received}


class LoginIn(BaseModel):
    user: str
    password: SecretStr


class Login:
    description = "Has a secret argument: it is never kept in the URL or the browser's storage"
    input_schema = LoginIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        received = _plain(dict(inputs))
        RECEIVED.append(("forms.login", received))
        return {"user": received["user"]}


class Creds(BaseModel):
    user: str
    password: SecretStr  # writeOnly and format password


class ApiKey(BaseModel):
    label: str
    key: str = Field(json_schema_extra={"format": "password"})


class TokenAuth(BaseModel):
    kind: Literal["token"]
    token: SecretStr


class BasicAuth(BaseModel):
    kind: Literal["basic"]
    user: str
    password: SecretStr


class VaultIn(BaseModel):
    # A declared dialect keeps the schema as written ($defs and $ref), so the page meets the references.
    model_config = ConfigDict(json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"})

    name: str
    creds: Creds
    keys: list[ApiKey] = []
    backup: Creds | None = None
    auth: TokenAuth | BasicAuth = Field(discriminator="kind")
    extra: dict[str, str] = Field(
        default_factory=dict,
        json_schema_extra={"allOf": [{"properties": {"pin": {"type": "string", "writeOnly": True}}}]},
    )


class Vault:
    description = "Has secrets nested at every depth: none of them is kept in the URL or the browser's storage"
    input_schema = VaultIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        received = _plain(dict(inputs))
        RECEIVED.append(("forms.vault", received))
        return {"name": received["name"]}


class TicketIn(BaseModel):
    title: str = Field(min_length=1)
    kind: Literal["bug", "idea"]
    count: int = Field(default=1, ge=1, le=10)
    steps: list[str] = []


class Ticket:
    description = "Files a ticket (a small form for the keyboard-only test)"
    input_schema = TicketIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        received = _plain(dict(inputs))
        RECEIVED.append(("forms.ticket", received))
        return {"received": received}


class RoutedIn(BaseModel):
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})
    text: str


class Routed:
    description = "Its region argument is mirrored in the Mcp-Param-Region header"
    input_schema = RoutedIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        received = _plain(dict(inputs))
        RECEIVED.append(("forms.routed", received))
        return {"received": received}


def form_registry() -> Registry:
    registry = Registry()
    registry.register("forms.order", Order())
    registry.register("forms.login", Login())
    registry.register("forms.vault", Vault())
    registry.register("forms.ticket", Ticket())
    registry.register("forms.routed", Routed())
    registry.register("demo.echo", Echo())
    registry.register("demo.media", Media())
    return registry
