"""What a pool's admission reads of its replicas, each read at the moment of a decision.

The runtime fills it from the replicas' live states (``backends/state.py``); tests fill it
with constants. Every reading is a callable, so a decision always sees the latest scrape,
first token and health change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _no_load() -> tuple[float, float]:
    return 0.0, 0.0


@dataclass(frozen=True, slots=True)
class FleetView:
    # (requests waiting in the engines, mean KV cache usage): the overload ladder's signals
    load: Callable[[], tuple[float, float]] = _no_load
    # the best replica's predicted TTFT for a prompt of so many tokens, and whether that
    # prediction rests on observations (``TtftModel.supported``); None: no replica. One
    # call: the replicas' features are read once for both.
    ttft: Callable[[float], tuple[float, bool] | None] = lambda tokens: (0.0, True)
    # what the routable replicas take at once (``BackendState.dispatch_cap``; None: unknown)
    slots: Callable[[], int | None] = lambda: None
    # ... and whether those are limits the replicas showed, not probes of their room
    limits_shown: Callable[[], bool] = lambda: True
    # what the routable replicas have shown they run at once (their limits, or, for one
    # still probed, the most it was seen taking; ``BackendState.slots_shown``; None: as
    # ``slots``): the drain the saturation detector may count on
    slots_shown: Callable[[], int | None] = lambda: None
    # requests waiting inside the engines, by their fresh reports
    waiting: Callable[[], float] = lambda: 0.0
    # a request of so many prompt tokens asked the pool (``BackendState.asked``: a batch
    # read full with far longer prompts is no limit for these)
    asked: Callable[[float], None] = lambda tokens: None
