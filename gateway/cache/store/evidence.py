"""Per-entry thresholds that tighten from evidence (after vCache, arXiv 2502.03771).

A semantic hit serves an answer that was right for another question; only the backend can say
whether it is right for this one. With sampled verification (``cache/verification/sampling.py``)
a share of semantic hits is also asked of the backend, and the two answers compared. Each entry
keeps what was learnt about it:

- ``agree`` / ``disagree``: how many sampled verifications of its hits agreed or not;
- ``min_cosine``: the least cosine (asked question against the entry's question) a semantic
  hit on this entry needs from now on, above the rule's own.

Algorithm: vCache learns, per entry, the similarity above which its answer is right. Here
the estimate is the simplest one that is safe with few observations: a disagreement at
cosine ``c`` says the answer was wrong for a question that close, so the entry's threshold
rises to ``c + margin`` (never falls): that question, and any asked as far or further from
the entry, misses from then on, while questions closer than it still hit. An agreement
leaves the threshold where it is (the global rule's, or a raised one). An entry whose
verifications disagreed ``max_disagreements`` times is exact-only: its answer is still the
backend's answer to its own question (an exact hit), but no longer to anyone else's.
Decisions are values: ``refusal`` says why a hit on the entry is refused, ``after`` is the
evidence after one more verification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REASONS = ("tightened", "exact_only")


@dataclass(frozen=True, slots=True)
class Evidence:
    agree: int = 0
    disagree: int = 0
    min_cosine: float | None = None  # None: the rule's own threshold only

    def refusal(self, cosine: float, max_disagreements: int) -> str | None:
        """Why a semantic hit at ``cosine`` on this entry is refused (None: the rule decides)."""
        if self.disagree >= max_disagreements:
            return "exact_only"
        if self.min_cosine is not None and cosine < self.min_cosine:
            return "tightened"
        return None

    def after(self, *, agreed: bool, cosine: float, margin: float) -> Evidence:
        """The evidence once a verification of a hit at ``cosine`` agreed (or not)."""
        if agreed:
            return Evidence(self.agree + 1, self.disagree, self.min_cosine)
        raised = cosine + margin
        if self.min_cosine is not None:
            raised = max(raised, self.min_cosine)
        return Evidence(self.agree, self.disagree + 1, raised)

    def to_dict(self) -> dict[str, Any]:
        return {"agree": self.agree, "disagree": self.disagree, "min_cosine": self.min_cosine}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Evidence:
        """Evidence as stored; absent (an entry stored before verification existed): none."""
        if not data:
            return NONE
        floor = data.get("min_cosine")
        return cls(
            agree=int(data.get("agree", 0)),
            disagree=int(data.get("disagree", 0)),
            min_cosine=None if floor is None else float(floor),
        )


NONE = Evidence()
