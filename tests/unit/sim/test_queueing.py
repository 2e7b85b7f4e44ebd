"""One slot with a fixed service time is an M/D/1 queue under Poisson arrivals."""

from __future__ import annotations

import random

import pytest

from loadtests.sim.engine import Engine
from loadtests.sim.profile import StepTime
from loadtests.sim.virtual import VirtualRunner

from .conftest import make_profile, req

STEP_S = 0.01
TOKENS = 5  # one prefill step (first token) + four decode steps
SERVICE_S = STEP_S * TOKENS


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_one_slot_matches_pollaczek_khinchine(rho: float) -> None:
    step = StepTime(base_s=STEP_S, per_prefill_token_s=0.0, per_running_seq_s=0.0,
                    per_context_token_s=0.0)  # fmt: skip
    runner = VirtualRunner(Engine(make_profile(step_time=step, max_num_seqs=1)))
    rng = random.Random(42)
    t, arrivals = 0.0, []
    for i in range(20_000):
        t += rng.expovariate(rho / SERVICE_S)
        arrivals.append((t, req(f"r{i}", [i % 50_000 + 7, 1, 2], TOKENS)))
    traces = runner.run(arrivals)
    waits = [tr.admitted - tr.arrival for tr in traces.values() if tr.admitted is not None]
    assert len(waits) == len(arrivals)
    expected = rho * SERVICE_S / (2 * (1 - rho))
    assert sum(waits) / len(waits) == pytest.approx(expected, rel=0.1)
    for tr in traces.values():
        assert tr.finished is not None
        assert tr.admitted is not None
        assert tr.finished - tr.admitted == pytest.approx(SERVICE_S)
