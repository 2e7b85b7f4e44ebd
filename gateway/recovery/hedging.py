"""When to race a late first token on another replica, and when to give up on a replica.

For a dispatched request still waiting for its first token, with ``elapsed`` seconds since
dispatch and ``upper`` its replica's calibrated prediction (the TTFT predictor's upper band,
exceeded about one time in ten when calibrated):

- ``FAIL_OVER`` once ``elapsed`` passes ``stall_factor * upper`` (at least ``stall_min_s``):
  the replica is stalled (a stuck step, a process that keeps its socket and sends nothing);
  the request is cancelled there and tried on another replica (a retry: paid from the pool's
  retry budget);
- ``HEDGE`` once ``elapsed`` passes ``hedge_after * upper`` (default: the band itself), with
  ``upper`` floored at ``stall_min_s / stall_factor`` as the stall limit floors it (a band
  of a few milliseconds is the predictor's, not the replica's: jitter passes it, and would
  spend the budget before a real straggler comes), when all hold: the band rests on observations
  (a prior is no evidence of lateness), hedging is on, the request has not hedged yet,
  another routable replica with a free slot is predicted to deliver sooner than this one
  would be given up (``elapsed`` plus its prediction within the stall limit: a request past
  its band may well be stalled, and identical replicas predict the same, so "sooner than the
  band" would never hedge between them; a busy replica, whose prediction holds its queue,
  is not raced), the pool is not saturated and has not been for ``hedge_calm_s`` (a hedge
  must not take a slot that queued work needs, and a lull between bursts is no spare capacity:
  the next burst needs the slot), a sheddable request is not hedged while anything waits,
  and the pool's hedge budget allows one more extra request (``hedge_budget`` of its recent
  requests); the first first token wins and the other attempt is cancelled at once;
- otherwise ``WAIT``.

``next_look`` says when the answer can next change (the hedge point, then the stall limit),
so the caller sleeps until then instead of polling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from gateway.admission.queue import Priority
from gateway.schema import Recovery


class Move(StrEnum):
    WAIT = "wait"
    HEDGE = "hedge"
    FAIL_OVER = "fail_over"


@dataclass(frozen=True, slots=True)
class Straggler:
    """What is known of a request waiting for its first token."""

    elapsed_s: float  # since dispatch
    upper_s: float  # its replica's calibrated predicted TTFT
    supported: bool  # that prediction rests on observations
    hedged: bool  # a hedge is already out
    alternative_s: float | None  # the best other free replica's prediction (None: none)
    calm_s: float  # since the pool was last found saturated (0: it is; inf: never)
    anything_waits: bool  # the pool's queue, or the engines' reports
    priority: Priority


def stall_limit_s(upper_s: float, settings: Recovery) -> float:
    return max(settings.stall_min_s, settings.stall_factor * upper_s)


def hedge_at_s(upper_s: float, settings: Recovery) -> float:
    """The band floored as the stall limit floors it (``stall_min_s / stall_factor``: a
    band of a few milliseconds is the predictor's, not the replica's), times ``hedge_after``."""
    return settings.hedge_after * max(upper_s, settings.stall_min_s / settings.stall_factor)


def decide(straggler: Straggler, settings: Recovery, budget_allows: bool) -> Move:
    """What to do now (``budget_allows``: the hedge budget has room for one more)."""
    if straggler.elapsed_s >= stall_limit_s(straggler.upper_s, settings):
        return Move.FAIL_OVER
    late = straggler.elapsed_s >= hedge_at_s(straggler.upper_s, settings)
    if not late or not _may_hedge(straggler, settings):
        return Move.WAIT
    return Move.HEDGE if budget_allows else Move.WAIT


def _may_hedge(straggler: Straggler, settings: Recovery) -> bool:
    if not settings.hedge or straggler.hedged or not straggler.supported:
        return False
    if straggler.calm_s <= settings.hedge_calm_s:
        return False
    if straggler.priority is Priority.SHEDDABLE and straggler.anything_waits:
        return False
    sooner = straggler.alternative_s
    limit = stall_limit_s(straggler.upper_s, settings)
    return sooner is not None and straggler.elapsed_s + sooner < limit


def next_look(straggler: Straggler, settings: Recovery) -> float:
    """Seconds from dispatch at which ``decide`` may answer otherwise (inf: never)."""
    stall = stall_limit_s(straggler.upper_s, settings)
    hedge_at = min(hedge_at_s(straggler.upper_s, settings), stall)
    if straggler.elapsed_s < hedge_at and settings.hedge and not straggler.hedged:
        return hedge_at
    return stall if straggler.elapsed_s < stall else math.inf
