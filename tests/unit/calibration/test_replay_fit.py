"""The calibration workload replayed in virtual time, and the fit that searches with it."""

from __future__ import annotations

from typing import Any

import pytest

from loadtests.calibration.fit import coefficients, fit_profile, log_errors, loss
from loadtests.calibration.replay import replay
from loadtests.calibration.workload import Plan
from loadtests.sim.profile import Profile, StepTime

ONE = Plan(lengths=(100,), concurrencies=(1,), rounds=2, max_tokens=5, hit_length=100)


def profile(**step: float) -> Profile:
    coefficients = {
        "base_s": 0.01,
        "per_prefill_token_s": 1e-4,
        "per_running_seq_s": 0.0,
        "per_context_token_s": 0.0,
        **step,
    }
    frontend = coefficients.pop("frontend_s", 0.005)
    return Profile(
        name="t",
        model="t",
        step_time=StepTime(**coefficients),
        num_kv_blocks=1000,
        max_num_seqs=8,
        max_num_batched_tokens=512,
        max_model_len=4096,
        frontend_s=frontend,
    )


def by_name(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in cells}


def test_a_lone_request_costs_front_end_prefill_and_decode_steps() -> None:
    found = by_name(replay(profile(), ONE, {"L100 c1": 100, "hit L100 c1": 100}))
    assert found["L100 c1"]["ttft_p50_s"] == pytest.approx(0.005 + 0.01 + 100e-4)
    assert found["L100 c1"]["tpot_p50_s"] == pytest.approx(0.01)
    # The repeated prompt's 96 tokens in full blocks are cached: 4 computed after them.
    hit = profile(per_cached_chunk_s=0.02)
    found = by_name(replay(hit, ONE, {"L100 c1": 100, "hit L100 c1": 100}))
    assert found["hit L100 c1"]["ttft_p50_s"] == pytest.approx(0.005 + 0.01 + 4e-4 + 0.02)


def test_concurrent_requests_queue_at_the_front_end_then_share_steps() -> None:
    plan = Plan(lengths=(100,), concurrencies=(2,), rounds=1, max_tokens=3, hit_length=100)
    found = replay(profile(), plan, {"L100 c2": 100, "hit L100 c1": 100})
    ttfts = sorted(s["ttft_s"] for s in found[0]["samples"])
    # a: through the front end at 5 ms, prefilled alone (20 ms). b: through at 10 ms, joins
    # the next step with a's decode (10 ms + 100 prompt tokens): first token at 45 ms.
    assert ttfts == pytest.approx([0.025, 0.045])


def test_log_errors_pair_cells_by_name() -> None:
    real = [{"name": "a", "ttft_p50_s": 0.1, "tpot_p50_s": 0.02}]
    sim = [{"name": "a", "ttft_p50_s": 0.2, "tpot_p50_s": 0.01}]
    assert log_errors(real, sim) == pytest.approx([0.6931, -0.6931], abs=1e-4)


def test_fit_recovers_a_profile_from_its_own_replay() -> None:
    plan = Plan(lengths=(16, 400, 1000), concurrencies=(1, 3), rounds=2, max_tokens=8)
    tokens = {f"L{n} c{c}": n for n in plan.lengths for c in plan.concurrencies}
    tokens["hit L1024 c1"] = 1024
    truth = profile(
        base_s=0.03,
        per_prefill_token_s=2e-4,
        per_context_token_s=2e-6,
        per_cached_chunk_s=0.02,
        frontend_s=0.01,
    )
    real = replay(truth, plan, tokens)
    start = profile(
        base_s=0.05,
        per_prefill_token_s=1e-4,
        per_running_seq_s=1e-3,
        per_context_token_s=1e-5,
        per_prefill_attention_s=1e-9,
        per_cached_chunk_s=0.005,
        frontend_s=0.02,
    )
    fitted = fit_profile(real, start, plan, max_evals=400, restarts=2)
    assert loss(start, real, plan) > 0.3
    assert loss(fitted, real, plan) < 0.03
    # The other fields are the start's; the coefficients moved toward the truth's.
    assert fitted.max_num_batched_tokens == start.max_num_batched_tokens
    assert coefficients(fitted)[1] == pytest.approx(2e-4, rel=0.1)
