"""Admission on a replica's own state: no refusal while its engine shows room (issue 31).

The 200-user ramp refused requests ``deadline_unmeetable`` (predicted 6.1-6.3 s) with the
pool nominal and the engine reporting nothing waiting: the TTFT model, fitted while the
gateway itself was CPU-bound, predicted past the deadline. A request that an engine with
room takes now is admitted whatever the model says; the same prediction refuses once the
engine reports a queue, or its first tokens come later than predicted. Injected clock."""

from __future__ import annotations

import pytest

from gateway.admission.decision import AdmissionRequest
from gateway.admission.fleet import FleetView
from gateway.admission.queue import Lane, Priority
from gateway.admission.rules import DEADLINE
from gateway.backends.load_watch import fold_load
from gateway.backends.registry import BackendRegistry
from gateway.backends.scrape import Load
from gateway.backends.state import BackendState, Health
from gateway.backends.ttft import TtftFeatures
from tests.unit.admission.pools import Clock, pool_admission
from tests.unit.gateway.helpers import policy

ENGINE = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: p, engine: vllm}
models:
  m: {pool: p}
"""


def _engine(clock: Clock) -> BackendState:
    registry = BackendRegistry(clock=clock)
    registry.reconcile(policy(ENGINE))
    state = registry.get("a")
    assert state is not None
    state.health = Health.HEALTHY
    model = state.ttft_model
    for pending in (10.0, 30.0, 50.0, 50.0, 40.0):  # 8 s each: a gateway short of CPU
        features = TtftFeatures(100.0, pending * 100.0, pending, pending, pending / 10.0)
        model.observe(features, 8.0, model.predict(features))
    model.fold()  # as a prediction past ``FOLD_S`` would (the clock here stands still)
    state.inflight = state.pending = 40
    state.pending_tokens = 4000.0
    return state


# (engine's read: waiting; late first token s ago) -> the refusal
CASES: dict[str, tuple[float, float | None, str | None]] = {
    "engine reports nothing waiting, first tokens in line: admitted": (0.0, None, None),
    "engine reports 3 waiting: refused past the deadline": (3.0, None, DEADLINE),
    "a first token came later than predicted: refused past the deadline": (0.0, 0.2, DEADLINE),
}  # fmt: skip


@pytest.mark.parametrize(("waiting", "late_s", "refused"), CASES.values(), ids=CASES.keys())
def test_no_deadline_refusal_while_the_engine_shows_room(
    waiting: float, late_s: float | None, refused: str | None
) -> None:
    clock = Clock()
    state = _engine(clock)
    if late_s is not None:
        clock.now -= late_s
        state.first_token_late(10.0, 1.0)
        clock.now += late_s
    fold_load(state, Load(running=40, waiting=waiting), clock.now - 0.3, fresh_s=2.0)
    fleet = FleetView(
        ttft=lambda tokens: state.ttft_prediction(tokens),
        slots=lambda: state.dispatch_cap,
        limits_shown=lambda: state.limit_shown,
        waiting=lambda: state.load.waiting if state.reports_waiting else 0.0,
    )
    admission = pool_admission(
        slots=1000, clock=clock, admission="{objective: {ttft_s: 2.0}}", fleet=fleet
    )
    request = AdmissionRequest(
        Priority.STANDARD, Lane.SHORT, 200.0, None, False, prompt_tokens=100.0
    )
    decision = admission.check(request)
    assert decision.prediction.ttft_s > 6.0  # past the default deadline, 3 x 2 s
    assert decision.refuse == refused
