"""``evolve`` makes what ``dataclasses.replace`` makes: for the path's records field for field,
and through ``replace`` itself where copying fields would skip work ``__init__`` does."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from gateway.path.context import Plan, RequestContext, evolve
from gateway.path.flow import Flow


@dataclass(frozen=True, slots=True)
class Checked:
    value: int
    seen: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.seen.append(self.value)


@dataclass(frozen=True, slots=True)
class Derived:
    value: int
    double: int = field(init=False, default=0)


@dataclass(frozen=True)
class Unslotted:
    value: int


CTX = RequestContext("id", 1.0, None, None, {})  # type: ignore[arg-type]
# id -> (record, changes)
CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "a flow, one field": (Flow(CTX, {"a": "b"}, None), {"plan": "p"}),  # type: ignore[arg-type]
    "a flow, several": (Flow(CTX, {}, None), {"permit": 1, "degraded": True}),  # type: ignore[arg-type]
    "a context": (CTX, {"cache": "miss", "embed_s": 0.5}),
    "a plan": (Plan(None, "model"), {"length": "short", "prompt_tokens": 3}),  # type: ignore[arg-type]
    "nothing changed": (CTX, {}),
    "a __post_init__: through replace": (Checked(1), {"value": 2}),
    "a field outside __init__: through replace": (Derived(1), {"value": 2}),
    "not slotted: through replace": (Unslotted(1), {"value": 2}),
}


@pytest.mark.parametrize(("record", "changes"), CASES.values(), ids=CASES.keys())
def test_evolve_makes_what_replace_makes(record: Any, changes: dict[str, Any]) -> None:
    new = evolve(record, **changes)
    assert type(new) is type(record)
    assert new == replace(record, **changes)
    assert new is not record


def test_a_post_init_runs() -> None:
    record = Checked(1)
    evolve(record, value=2)
    assert record.seen == [1, 2]


@pytest.mark.parametrize("record", [CTX, Checked(1)], ids=["copied", "through replace"])
def test_a_name_that_is_no_field_raises(record: Any) -> None:
    with pytest.raises(TypeError):
        evolve(record, no_such_field=1)
