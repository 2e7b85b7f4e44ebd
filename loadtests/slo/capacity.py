"""The fleet's capacity in requests per second for a request mix, from its engines' profiles.

Algorithm: with all ``S = max_num_seqs`` slots of a replica busy, the simulator's step-time
model (``loadtests.sim.profile.StepTime``) summed over a request's steps gives its share of
engine time,

    w = a*P + e*P*(P+1)/2 + f*(k-1) + (k + D)*(base/S + b) + c*(P*(D+1) + D*D/2)

where ``P`` is its prompt tokens, ``O`` its output tokens, ``k = ceil(P / B)`` its prefill
chunks (``B = max_num_batched_tokens``), ``D = (O - 1) / t`` its decode steps (``t`` the
tokens a step yields: 1, or speculative decoding's expectation, whose per-step overheads join
``base`` and ``b``), and ``a, b, c, e, f, base`` the profile's per prefill token, per running
sequence, per context token, per attention pair, per cached chunk and base costs; a step's
base cost is shared by the ``S`` sequences it serves. A replica then completes ``1 / mean(w)``
requests per engine second, at most ``1 / frontend_s`` (its API server is one process), times
the fleet's ``speed`` per wall-clock second; the fleet's capacity is the sum over replicas.
It is the throughput of saturated engines, the most any router can get; it leaves out
KV-cache preemption (these fleets never fill their caches) and step-time noise (mean 1).

``P`` and ``O`` are what the simulated engine will see, from its own functions:
``engine_tokens`` renders the chat prompt and counts it with the simulator's tokenizer, and
the output is ``max_tokens`` with ``ignore_eos``, else the shorter of ``max_tokens`` and the
engine's deterministic natural stop for that prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from loadtests.loadgen.fleet import replicas
from loadtests.loadgen.request import PlannedRequest
from loadtests.sim.fleet import FleetConfig, group_profile
from loadtests.sim.generation import chat_prompt, natural_length
from loadtests.sim.profile import NaturalStop, Profile
from loadtests.sim.tokenizer import count_tokens


@dataclass(frozen=True, slots=True)
class Work:
    """What one request asks of the engine."""

    prompt_tokens: int
    output_tokens: int


def engine_tokens(request: PlannedRequest, stop: NaturalStop) -> Work:
    """The prompt and output tokens the simulated engine will count for ``request``."""
    prompt = chat_prompt(request.messages)
    tokens = max(1, count_tokens(prompt))
    if request.extra.get("ignore_eos"):
        return Work(tokens, request.max_tokens)
    seed = int(request.extra.get("seed") or 0)
    return Work(tokens, min(request.max_tokens, natural_length(prompt, seed, stop)))


def engine_seconds(work: Work, profile: Profile) -> float:
    """The request's share of a saturated replica's engine time (``w`` above)."""
    step, spec = profile.step_time, profile.speculative
    slots = profile.max_num_seqs
    p, o = work.prompt_tokens, work.output_tokens
    per_step = step.base_s + (spec.base_overhead_s if spec else 0.0)
    per_seq = step.per_running_seq_s + (spec.per_seq_overhead_s if spec else 0.0)
    tokens_per_step = spec.expected_tokens_per_step() if spec else 1.0
    chunks = math.ceil(p / profile.max_num_batched_tokens)
    decode_steps = max(0, o - 1) / tokens_per_step
    return (
        step.per_prefill_token_s * p
        + step.per_prefill_attention_s * p * (p + 1) / 2
        + step.per_cached_chunk_s * (chunks - 1)
        + (chunks + decode_steps) * (per_step / slots + per_seq)
        + step.per_context_token_s * (p * (decode_steps + 1) + decode_steps**2 / 2)
    )


def replica_capacity_rps(works: Sequence[Work], profile: Profile) -> float:
    """Requests per engine second one saturated replica completes on this mix."""
    if not works:
        raise ValueError("capacity of an empty mix")
    mean = sum(engine_seconds(w, profile) for w in works) / len(works)
    engine = 1.0 / mean
    return min(engine, 1.0 / profile.frontend_s) if profile.frontend_s else engine


@dataclass(frozen=True, slots=True)
class Capacity:
    """The fleet's capacity on one mix, and what it was computed from."""

    rps: float  # wall-clock requests per second, whole fleet
    replicas: int
    slots: int  # sequences the fleet runs at once
    mean_prompt_tokens: float
    mean_output_tokens: float
    mean_engine_s: float  # mean w over the mix, engine seconds

    def describe(self) -> str:
        return (
            f"{self.rps:.2f} req/s ({self.replicas} replicas x {self.slots // self.replicas} "
            f"slots; mean {self.mean_prompt_tokens:,.0f} prompt + "
            f"{self.mean_output_tokens:,.0f} output tokens, {self.mean_engine_s * 1000:,.0f} ms "
            "of a saturated engine's time per request)"
        )


def fleet_capacity(fleet: FleetConfig, requests: Sequence[PlannedRequest]) -> Capacity:
    """The whole fleet's wall-clock capacity on the mix of ``requests`` (module docstring);
    the means it shows are the first group's."""
    if not requests:
        raise ValueError("capacity of an empty mix")
    count = len(replicas(fleet))  # also refuses a fleet without groups
    total, slots = 0.0, 0
    described: tuple[list[Work], float] | None = None
    for group in fleet.groups:
        profile = group_profile(group)
        works = [engine_tokens(r, profile.natural_stop) for r in requests]
        total += group.replicas * replica_capacity_rps(works, profile)
        slots += group.replicas * profile.max_num_seqs
        if described is None:
            mean_w = sum(engine_seconds(w, profile) for w in works) / len(works)
            described = (works, mean_w)
    if described is None:
        raise ValueError("the fleet has no groups")
    works, mean_w = described
    return Capacity(
        rps=total * fleet.speed,
        replicas=count,
        slots=slots,
        mean_prompt_tokens=sum(w.prompt_tokens for w in works) / len(works),
        mean_output_tokens=sum(w.output_tokens for w in works) / len(works),
        mean_engine_s=mean_w,
    )
