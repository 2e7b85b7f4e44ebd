"""A refusal's words add up: the predicted first token (time spent + prediction), the limit
it passes, and the time already spent, by table."""

from __future__ import annotations

import pytest

from gateway.admission.decision import AdmissionRequest
from gateway.admission.queue import Lane, Priority
from gateway.admission.refusal_text import refusal_text


def asked(arrival: float | None = 10.0, deadline: float | None = None) -> AdmissionRequest:
    return AdmissionRequest(
        Priority.STANDARD, Lane.SHORT, 100.0, deadline, False, 50.0, arrival=arrival
    )


HEAD = "Pool 'small' cannot serve this request in time"
# id -> (reason, request, predicted TTFT from now, objective, now, message)
CASES = {
    "the objective, with time spent": (
        "objective_unmeetable", asked(), 2.1, 2.0, 10.2,
        f"{HEAD}: predicted first token at 2.3 s, past the 2.0 s objective; "
        "0.2 s already spent here.",
    ),
    "the issue's case: 1.9 s predicted after 0.2 s spent": (
        "objective_unmeetable", asked(), 1.9, 2.0, 10.2,
        f"{HEAD}: predicted first token at 2.1 s, past the 2.0 s objective; "
        "0.2 s already spent here.",
    ),
    "close to the limit: two decimals": (
        "objective_unmeetable", asked(), 2.02, 2.0, 10.0,
        f"{HEAD}: predicted first token at 2.02 s, past the 2.00 s objective; "
        "0.0 s already spent here.",
    ),
    "the client's deadline": (
        "deadline_unmeetable", asked(deadline=11.5), 1.4, 2.0, 10.5,
        f"{HEAD}: predicted first token at 1.9 s, past the 1.5 s deadline; "
        "0.5 s already spent here.",
    ),
    "a full queue": (
        "queue_full", asked(), 3.0, 2.0, 10.0,
        f"{HEAD} (queue full): predicted first token at 3.0 s (objective 2.0 s); "
        "0.0 s already spent here.",
    ),
    "the ladder, a critical request (no objective)": (
        "overload_step_3", asked(), 0.5, None, 11.0,
        f"{HEAD} (overload step 3): predicted first token at 1.5 s (no objective); "
        "1.0 s already spent here.",
    ),
    "no arrival known": (
        "objective_unmeetable", asked(arrival=None), 2.5, 2.0, 99.0,
        f"{HEAD}: predicted first token at 2.5 s, past the 2.0 s objective; "
        "0.0 s already spent here.",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("reason", "request_", "ttft", "objective", "now", "text"), CASES.values(), ids=CASES
)
def test_refusal_text(
    reason: str,
    request_: AdmissionRequest,
    ttft: float,
    objective: float | None,
    now: float,
    text: str,
) -> None:
    arrival = request_.arrival if request_.arrival is not None else now
    deadline = None if request_.deadline is None else request_.deadline - arrival
    assert refusal_text("small", reason, now - arrival, ttft, objective, deadline) == text
