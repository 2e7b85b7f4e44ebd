"""The fleet's capacity from its profile: per-request engine time and the fleet's sum (pure)."""

from __future__ import annotations

import pytest

from loadtests.loadgen.request import PlannedRequest
from loadtests.sim.fleet import FleetConfig, GroupConfig, group_profile
from loadtests.sim.generation import chat_prompt, natural_length
from loadtests.sim.profile import NaturalStop, Profile, Speculative, StepTime
from loadtests.slo.capacity import (
    Work,
    engine_seconds,
    engine_tokens,
    fleet_capacity,
    replica_capacity_rps,
)


def _profile(**over: float) -> Profile:
    step = {"base_s": 0.01, "per_prefill_token_s": 1e-4, "per_running_seq_s": 1e-3,
            "per_context_token_s": 0.0, "per_cached_chunk_s": 0.02}  # fmt: skip
    step.update({k: v for k, v in over.items() if k in StepTime.model_fields})
    return Profile(name="t", model="m", step_time=StepTime(**step), num_kv_blocks=10_000,
                   max_num_seqs=4, max_num_batched_tokens=1000, max_model_len=8192,
                   frontend_s=over.get("frontend_s", 0.0))  # fmt: skip


SPEC = Speculative(num_draft_tokens=1, acceptance_rate=1.0, base_overhead_s=0.002,
                   per_seq_overhead_s=0.001)  # fmt: skip


@pytest.mark.parametrize(
    ("work", "over", "spec", "seconds"),
    [
        # one chunk, 10 decode steps, each step's base shared by 4: 0.05 + 11 x 0.0035
        (Work(500, 11), {}, None, 0.0885),
        # three chunks (two after cached KV), no decode step: 0.25 + 0.04 + 3 x 0.0035
        (Work(2500, 1), {}, None, 0.3005),
        # context read: c x (P x (D + 1) + D^2 / 2) = 1e-6 x (300 + 2)
        (Work(100, 3), {"per_context_token_s": 1e-6}, None, 0.01 + 3 * 0.0035 + 302e-6),
        # attention pairs of the prompt: e x P (P + 1) / 2
        (Work(100, 1), {"per_prefill_attention_s": 1e-8}, None, 0.0135 + 5.05e-5),
        # speculation: 2 tokens a step (D = 2), overheads join the step and per-sequence costs
        (Work(100, 5), {}, SPEC, 0.01 + 3 * (0.012 / 4 + 0.002)),
    ],
)
def test_engine_seconds_follow_the_step_model(
    work: Work, over: dict[str, float], spec: Speculative | None, seconds: float
) -> None:
    profile = _profile(**over).model_copy(update={"speculative": spec})
    assert engine_seconds(work, profile) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("frontend_s", "rps"),
    [(0.0, 1 / 0.1945), (0.5, 2.0), (0.1, 1 / 0.1945)],  # the API server caps at 1/frontend_s
)
def test_replica_capacity_is_one_over_the_mean(frontend_s: float, rps: float) -> None:
    works = [Work(500, 11), Work(2500, 1)]  # 0.0885 and 0.3005 s
    assert replica_capacity_rps(works, _profile(frontend_s=frontend_s)) == pytest.approx(rps)


def test_capacity_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        replica_capacity_rps([], _profile())


def _request(max_tokens: int, extra: dict[str, object] | None = None) -> PlannedRequest:
    return PlannedRequest(index=0, at_s=0.0, label="x", model="m",
                          messages=[{"role": "user", "content": "the user asked . about data"}],
                          max_tokens=max_tokens, temperature=0.0,
                          extra=extra or {})  # fmt: skip


def test_engine_tokens_read_the_simulators_own_counts() -> None:
    stop = NaturalStop()
    prompt = chat_prompt(_request(1).messages)
    natural = natural_length(prompt, 0, stop)
    assert engine_tokens(_request(10_000), stop).output_tokens == natural
    assert engine_tokens(_request(3), stop).output_tokens == 3  # max_tokens first
    assert engine_tokens(_request(900, {"ignore_eos": True}), stop).output_tokens == 900
    seeded = natural_length(prompt, 7, stop)
    assert engine_tokens(_request(10_000, {"seed": 7}), stop).output_tokens == seeded
    # 5 words and a full stop, plus 24 tokens of the chat template around them
    assert engine_tokens(_request(1), stop).prompt_tokens == 30


@pytest.mark.parametrize(("replicas", "speed"), [(1, 1.0), (2, 2.0), (3, 0.5)])
def test_fleet_capacity_adds_replicas_and_scales_with_speed(replicas: int, speed: float) -> None:
    group = GroupConfig(name="g", profile="gemma-3-270m-vllm-cpu", served_model="m",
                        replicas=replicas, base_port=9000, max_num_seqs=4)  # fmt: skip
    fleet = FleetConfig(speed=speed, groups=[group])
    reqs = [_request(50), _request(200, {"ignore_eos": True})]
    cap = fleet_capacity(fleet, reqs)
    profile = group_profile(group)
    one = replica_capacity_rps([engine_tokens(r, profile.natural_stop) for r in reqs], profile)
    assert cap.rps == pytest.approx(one * replicas * speed)
    assert (cap.replicas, cap.slots) == (replicas, 4 * replicas)
    assert cap.mean_output_tokens == pytest.approx((min(50, natural_length(
        chat_prompt(reqs[0].messages), 0, profile.natural_stop)) + 200) / 2)  # fmt: skip
