"""The tenant's priority is a ceiling: every (header, tenant) pair."""

from __future__ import annotations

import pytest

from gateway.admission.priority import effective_priority
from gateway.admission.queue import Priority

C, S, X = Priority.CRITICAL, Priority.STANDARD, Priority.SHEDDABLE

# id -> (requested by header, tenant's policy priority, effective)
CASES: dict[str, tuple[Priority | None, Priority | None, Priority]] = {
    "open gateway, no header": (None, None, S),
    "open gateway, critical": (C, None, C),
    "open gateway, sheddable": (X, None, X),
    "tenant critical, no header": (None, C, C),
    "tenant critical lowers to standard": (S, C, S),
    "tenant critical lowers to sheddable": (X, C, X),
    "tenant standard, no header": (None, S, S),
    "tenant standard cannot raise to critical": (C, S, S),
    "tenant standard lowers to sheddable": (X, S, X),
    "tenant sheddable, no header": (None, X, X),
    "tenant sheddable cannot raise to critical": (C, X, X),
    "tenant sheddable cannot raise to standard": (S, X, X),
    "tenant standard asks for standard": (S, S, S),
}


@pytest.mark.parametrize(("requested", "ceiling", "expected"), CASES.values(), ids=list(CASES))
def test_effective_priority(
    requested: Priority | None, ceiling: Priority | None, expected: Priority
) -> None:
    assert effective_priority(requested, ceiling) is expected
