"""Shared helpers for the simulator tests."""

from __future__ import annotations

from typing import Any

from loadtests.sim.engine import EngineRequest
from loadtests.sim.profile import Profile, StepTime


def make_profile(**overrides: Any) -> Profile:
    """A small, easily reasoned-about profile; keyword arguments override fields."""
    step = overrides.pop(
        "step_time",
        StepTime(base_s=0.01, per_prefill_token_s=0.001, per_running_seq_s=0.0,
                 per_context_token_s=0.0),
    )  # fmt: skip
    fields: dict[str, Any] = {
        "name": "test",
        "model": "test/model",
        "step_time": step,
        "block_size": 16,
        "num_kv_blocks": 1000,
        "max_num_seqs": 8,
        "max_num_batched_tokens": 512,
        "max_model_len": 4096,
    }
    fields.update(overrides)
    return Profile(**fields)


def req(
    rid: str, prompt: list[int], max_tokens: int = 4, stop_at: int | None = None
) -> EngineRequest:
    return EngineRequest(rid, prompt, max_tokens, stop_at)


def tokens(start: int, n: int) -> list[int]:
    """``n`` distinct token ids starting at ``start``."""
    return list(range(start, start + n))
