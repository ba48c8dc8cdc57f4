"""Who decides an approval: the strictest of the operator's policy, the destructive rule and the module's word."""

from __future__ import annotations

import pytest
from apcore import ModuleAnnotations

from apcore_mcp.calls.person_approval import ApprovalDesk, module_policy
from apcore_mcp.settings import SettingError, Settings


def gated(declared: str | None = None, *, destructive: bool = False) -> ModuleAnnotations:
    extra = {"mcp.approval": declared} if declared is not None else {}
    return ModuleAnnotations(requires_approval=True, destructive=destructive, extra=extra)


@pytest.mark.parametrize(
    ("default", "declared", "expected"),
    [
        ("client", None, "client"),
        ("client", "person", "person"),
        ("client", "deny", "deny"),
        ("person", "client", "person"),  # a module cannot loosen the operator's policy
        ("deny", "person", "deny"),
        ("client", "anyone", "deny"),  # an unknown word fails closed
    ],
)
def test_a_module_may_only_be_stricter(default: str, declared: str | None, expected: str) -> None:
    assert module_policy(default, destructive_person=False, annotations=gated(declared)) == expected


def test_destructive_modules_default_to_a_person_when_asked() -> None:
    wipe = gated(destructive=True)
    assert module_policy("client", destructive_person=True, annotations=wipe) == "person"
    assert module_policy("client", destructive_person=False, annotations=wipe) == "client"
    assert module_policy("client", destructive_person=True, annotations=gated()) == "client"
    assert module_policy("deny", destructive_person=True, annotations=wipe) == "deny"


def test_an_unknown_policy_setting_is_refused_by_name() -> None:
    with pytest.raises(SettingError, match="approval_policy must be one of: client, person, deny"):
        Settings(approval_policy="people")


async def test_one_caller_cannot_fill_the_desk_for_all() -> None:
    desk = ApprovalDesk(max_pending=10, max_per_caller=3)
    opened = [desk.open(tool="t", digest="d", asked_by="mallory", arguments="{}", ttl=60) for _ in range(5)]
    assert [pending is not None for pending in opened] == [True, True, True, False, False]
    assert desk.open(tool="t", digest="d", asked_by="alice", arguments="{}", ttl=60) is not None
