"""Backend performance profiles and the step-time model.

Algorithm: one engine step (one forward pass of the continuous batch) costs

    t = base_s + per_prefill_token_s * prefill_tokens
        + per_running_seq_s * num_running + per_context_token_s * total_context_tokens
        + per_prefill_attention_s * prefill_attention_pairs
        + per_cached_chunk_s * cached_chunks

seconds, where ``prefill_tokens`` are the prompt tokens computed in the step (chunked
prefill), ``num_running`` the sequences in the batch, ``total_context_tokens`` the KV
positions attention reads, ``prefill_attention_pairs`` the (prompt token, position it
attends to) pairs of the step's prefill chunks (attention's quadratic share of prefill) and
``cached_chunks`` the prefill chunks that follow KV already in the cache (a prefix hit or an
earlier chunk). The last two matter where attention is slow next to the weights, on a CPU:
vLLM's CPU build pays a fixed ~20 ms for a chunk after cached KV whether 1k or 2k positions
are cached (``profiles/gemma-3-270m-vllm-cpu.yaml``). Both are 0 by default. With
speculative decoding each step also pays the draft and verification cost ``base_overhead_s +
per_seq_overhead_s * num_decoding`` and a decoding sequence gains ``1 + accepted`` tokens,
accepted ~ truncated geometric with rate ``acceptance_rate`` over ``num_draft_tokens``
drafts (expectation ``1 + sum alpha^i``). With ``step_time_cv`` > 0 each step's time is
multiplied by a lognormal factor of mean 1 and that coefficient of variation.

Parameters live in YAML files under ``loadtests/sim/profiles/``; each file cites the
published figures it is calibrated from.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

PROFILE_DIR = Path(__file__).parent / "profiles"


class StepTime(BaseModel):
    """Coefficients of the linear step-time model (seconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_s: float = Field(ge=0)
    per_prefill_token_s: float = Field(ge=0)
    per_running_seq_s: float = Field(ge=0)
    per_context_token_s: float = Field(ge=0)
    per_prefill_attention_s: float = Field(default=0.0, ge=0)
    per_cached_chunk_s: float = Field(default=0.0, ge=0)

    def seconds(
        self,
        prefill_tokens: int,
        num_running: int,
        context_tokens: int,
        attention: int = 0,
        cached_chunks: int = 0,
    ) -> float:
        return (
            self.base_s
            + self.per_prefill_token_s * prefill_tokens
            + self.per_running_seq_s * num_running
            + self.per_context_token_s * context_tokens
            + self.per_prefill_attention_s * attention
            + self.per_cached_chunk_s * cached_chunks
        )


class Speculative(BaseModel):
    """Speculative decoding: k draft tokens per step, each accepted with ``acceptance_rate``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_draft_tokens: int = Field(ge=1, le=16)
    acceptance_rate: float = Field(ge=0, le=1)
    base_overhead_s: float = Field(default=0.0, ge=0)
    per_seq_overhead_s: float = Field(default=0.0, ge=0)

    def expected_tokens_per_step(self) -> float:
        a = self.acceptance_rate
        return 1.0 + sum(a**i for i in range(1, self.num_draft_tokens + 1))


class NaturalStop(BaseModel):
    """Range of the deterministic 'EOS' length used when ``ignore_eos`` is false."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_tokens: int = Field(default=16, ge=1)
    max_tokens: int = Field(default=512, ge=1)


class Profile(BaseModel):
    """One model on one hardware configuration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str
    hardware: str = ""
    step_time: StepTime
    block_size: int = Field(default=16, ge=1)
    num_kv_blocks: int = Field(ge=1)
    max_num_seqs: int = Field(ge=1)
    max_num_batched_tokens: int = Field(ge=1)
    max_model_len: int = Field(ge=2)
    default_max_tokens: int = Field(default=256, ge=1)
    # The API server's own time per request before the engine sees it (parsing, chat
    # template, tokenising), one request at a time: visible on a CPU server, negligible next
    # to a GPU's steps.
    frontend_s: float = Field(default=0.0, ge=0)
    # Real steps vary around the model (OS scheduling, caches, Python in the loop); without
    # it a closed loop of equal requests locks into one schedule that a real server never
    # holds. Lognormal factor of mean 1 and this coefficient of variation (0: exact).
    step_time_cv: float = Field(default=0.0, ge=0, le=2)
    natural_stop: NaturalStop = NaturalStop()
    speculative: Speculative | None = None


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a profile by file stem (``qwen2.5-1.5b-h100``) or by path to a YAML file."""
    path = Path(name_or_path)
    # Stems such as "qwen2.5-1.5b-h100" contain dots, so only a YAML suffix marks a path.
    if path.suffix not in (".yaml", ".yml"):
        path = PROFILE_DIR / f"{name_or_path}.yaml"
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return Profile.model_validate(data)


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
