"""Whether a semantic candidate is served: the verifier at the user's bound, or the old rule.

Algorithm: the policy picks one rule (``SemanticCache.uses_verifier``):
- verifier (default): the index's candidates are looked at from the verifier's
  ``min_cosine`` down; each is refused by the guard when ``guard`` is on (its facts are
  also among the verifier's inputs), then scored by the verifier and served when the
  probability reaches the threshold derived from ``max_false_hit_rate`` on the calibration
  curve shipped with the weights (``verifier.py``; the curve measured with the guard's veto
  when ``guard`` is on, without it when off);
- cosine (a policy that sets ``threshold``): cosine at least ``threshold``, then the guard.
A refusal is a reason (a guard reason, or ``"verifier"``); None serves the candidate.
A cached question's view (its words and facts, half of a candidate's cost) is kept in a
small LRU table, since the same popular entries come back as candidates lookup after lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from gateway.cache.judgement.guard import first_disagreement
from gateway.cache.judgement.pair_features import View, view_of
from gateway.cache.judgement.verifier import Verifier
from gateway.embedding import Vectors
from gateway.schema import SemanticCache


@dataclass(slots=True)
class Question:
    """The question asked, with its view made on first use (once per lookup)."""

    text: str
    vector: Vectors
    _view: View | None = field(default=None, init=False)

    @property
    def view(self) -> View:
        if self._view is None:
            self._view = view_of(self.text)
        return self._view


def views_table(size: int = 4096) -> Callable[[str], View]:
    """The views of the last ``size`` cached questions looked at (least recent out first)."""
    return lru_cache(maxsize=size)(view_of)


@dataclass(frozen=True)
class HitRule:
    guard: bool
    floor: float  # least cosine a candidate needs to be looked at
    verifier: Verifier | None = None
    threshold: float = 0.0  # on the verifier's probability
    views: Callable[[str], View] = field(default_factory=views_table, compare=False, repr=False)

    def refusal(self, asked: Question, cached: str, vector: Vectors, cosine: float) -> str | None:
        """Why the answer cached for ``cached`` must not be served for ``asked`` (None: it may)."""
        if cosine < self.floor:
            return "cosine"
        view = self.views(cached)
        if self.guard:
            reason = first_disagreement(view.facts, asked.view.facts)
            if reason is not None:
                return reason
        if self.verifier is None:
            return None
        p = self.verifier.probability(view, asked.view, vector, asked.vector)
        return None if p >= self.threshold else "verifier"


def hit_rule(settings: SemanticCache, verifier: Verifier | None) -> HitRule:
    """The rule for ``settings``; ``verifier`` is needed (and used) only without ``threshold``."""
    if settings.threshold is not None:
        return HitRule(guard=settings.guard, floor=settings.threshold)
    if verifier is None:
        raise ValueError("the verifier rule needs a verifier")
    return HitRule(
        guard=settings.guard,
        floor=verifier.min_cosine,
        verifier=verifier,
        threshold=verifier.curve_for(settings.guard).threshold_for(settings.max_false_hit_rate),
    )
