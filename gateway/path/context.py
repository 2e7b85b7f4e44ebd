"""The request's facts (``RequestContext``, fixed at identification) and its ``Plan`` (the
pool chosen by the plan stage, moved by compression, degrade or fallback)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.admission.queue import Priority
from gateway.embedding import Vectors
from gateway.openai.request import ParsedRequest
from gateway.policy.compile import CompiledPolicy, PoolSpec
from gateway.tracing.marks import StageMarks


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Facts about one request, fixed at arrival."""

    request_id: str
    arrival: float
    request: ParsedRequest
    policy: CompiledPolicy
    headers: Mapping[str, str]
    priority: Priority = Priority.STANDARD  # from x-gateway-priority
    marks: StageMarks = field(default_factory=StageMarks)  # when each stage ended
    tenant: str | None = None  # from the gateway API key, when the policy has tenants
    cache: str | None = None  # the cache stage's result (x-gateway-cache)
    difficulty_vote: float | None = None  # kNN vote over exemplars (classify.knn), if on
    query_vector: Vectors | None = None  # the question's embedding, for the learned model
    deadline: float | None = None  # from x-gateway-deadline-ms, on the clock of ``arrival``
    embed_s: float = 0.0  # seconds waited for the question's embedding (cache, kNN vote)


@dataclass(frozen=True, slots=True)
class Plan:
    pool: PoolSpec
    reason: str
    length: str = "unknown"  # the prompt's length class, a metrics label
    prompt_tokens: int | None = None  # the plan stage's estimate, when it classified
    # How far the difficulty score lay above the boundary that chose this pool (auto routes
    # decided by difficulty): a small margin makes the smaller pool a fair substitute.
    difficulty_margin: float | None = None
