"""The cross-encoder's hit rule: cheap checks on every candidate, the model on the best one.

Algorithm: with ``semantic.verifier: cross_encoder`` a candidate is looked at from the
cross-encoder's cosine floor (stored with its weights) down, refused by the entry's own
evidence and by the guard (when ``guard`` is on) as before (``decision.HitRule`` with no
feature verifier); the first candidate, best cosine first, that passes those and whose
answer fits the request is the only one the cross-encoder reads. Its probability must
reach the threshold the bound curve gives for ``max_false_hit_rate`` (``false_hit_bound.py``; the
curve with the guard's veto when ``guard`` is on). No probability within
``cross_encoder.timeout_s`` (late, or the worker too busy) refuses the hit as
``verifier_late``: the request goes to the backend. A refusal is a reason; None serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.cache.judgement.cross_encoder import CrossEncoderFile
from gateway.cache.judgement.verdict import HitRule
from gateway.schema import SemanticCache


class PairScores(Protocol):
    async def score(self, cached: str, asked: str, timeout_s: float) -> float | None: ...


@dataclass(frozen=True)
class CrossCheck:
    scores: PairScores
    threshold: float
    timeout_s: float

    async def refusal(self, cached: str, asked: str) -> str | None:
        """Why the answer cached for ``cached`` must not be served for ``asked`` (None: it may)."""
        if self.threshold > 1.0:  # no threshold keeps the bound: nothing to read
            return "verifier"
        p = await self.scores.score(cached, asked, self.timeout_s)
        if p is None:
            return "verifier_late"
        return None if p >= self.threshold else "verifier"


def floor_of(weights: CrossEncoderFile) -> float:
    """The least cosine at which the cross-encoder reads a pair (its calibration's floor)."""
    return float(weights.meta["min_cosine"])


def threshold_of(settings: SemanticCache, weights: CrossEncoderFile) -> float:
    curve = weights.curve if settings.guard else weights.curve_no_guard
    return curve.threshold_for(settings.max_false_hit_rate)


def cross_rules(
    settings: SemanticCache, weights: CrossEncoderFile, scores: PairScores
) -> tuple[HitRule, CrossCheck]:
    """The cheap rule for every candidate and the cross-encoder check for the best one."""
    rule = HitRule(guard=settings.guard, floor=floor_of(weights))
    check = CrossCheck(scores, threshold_of(settings, weights), settings.cross_encoder.timeout_s)
    return rule, check
