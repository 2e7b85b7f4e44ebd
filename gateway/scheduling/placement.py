"""Where a new prefix goes: the replica with the least cached work, when loads are level.

A prompt whose prefix blocks no candidate holds will be prefilled in full wherever it goes,
and the replica it lands on keeps it: its tenant's next requests follow it there (prefix
affinity). Left to the weighted scorers, with nothing in flight and flat engine metrics the
latency average decides, and on identical replicas that average mostly says which replica
serves cached prompts, so new prefixes pile up on one replica and a later burst from their
tenants meets one replica.

Algorithm: the *level* candidates are those with the least load (gateway in-flight plus
engine waiting) whose KV usage is within ``level_kv_usage`` of the lowest usage among them;
when two or more are level, the one with the least cached work (``PrefixIndex.work``: new
blocks taken in, decayed) gets the prefix, ties drawn with the pool's RNG. With one level
candidate, or when the prompt has no full block, a candidate holds part of the prefix, or
the request's session already has a replica, the weighted scorers decide as usual.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from gateway.scheduling.picker import TIE


def level_candidates(
    loads: Sequence[float], usages: Sequence[float], level_kv_usage: float
) -> list[int]:
    """Indices of the candidates that load signals cannot tell apart from the best."""
    least = min(loads)
    calm = [i for i, load in enumerate(loads) if load - least <= TIE]
    lowest = min(usages[i] for i in calm)
    return [i for i in calm if usages[i] - lowest <= level_kv_usage]


def spread_new_prefix(
    loads: Sequence[float],
    usages: Sequence[float],
    work: Sequence[float],
    level_kv_usage: float,
    rng: random.Random,
) -> int | None:
    """The candidate for a prefix nobody holds, or None when load alone should decide."""
    level = level_candidates(loads, usages, level_kv_usage)
    if len(level) < 2:
        return None
    least = min(work[i] for i in level)
    lightest = [i for i in level if work[i] - least <= TIE]
    return lightest[0] if len(lightest) == 1 else rng.choice(lightest)
