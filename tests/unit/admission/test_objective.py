"""The TTFT objective of a request: per pool, per priority, longer for long prompts."""

from __future__ import annotations

import pytest

from gateway.admission.objective import Objective
from gateway.admission.queue import Priority
from gateway.schema import Objective as Settings

DEFAULT = Objective.of(Settings(), long_from_tokens=2000)
TUNED = Objective.of(Settings(ttft_s=1.0, priority={"sheddable": 0.5}), long_from_tokens=1000)


@pytest.mark.parametrize(
    ("objective", "tokens", "priority", "seconds"),
    [
        (DEFAULT, 10, Priority.STANDARD, 2.0),
        (DEFAULT, 2000, Priority.STANDARD, 2.0),
        (DEFAULT, 8000, Priority.STANDARD, 8.0),  # 2 s + 1 s per 1k past 2k
        (DEFAULT, 2600, Priority.SHEDDABLE, 2.6),
        (TUNED, 10, Priority.STANDARD, 1.0),
        (TUNED, 10, Priority.SHEDDABLE, 0.5),
        (TUNED, 3000, Priority.SHEDDABLE, 2.5),
    ],
)
def test_objective_seconds(
    objective: Objective, tokens: float, priority: Priority, seconds: float
) -> None:
    assert objective.seconds(tokens, priority) == pytest.approx(seconds)
