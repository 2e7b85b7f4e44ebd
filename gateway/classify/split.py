"""The difficulty split of ``route: auto``: hard requests to the large pool, the rest to the
small one, when no tier rule matched.

Decision: ``large`` when the request's difficulty score is at least ``threshold``, else
``small``. The threshold comes from the policy (``routing.auto``): a score threshold as
given, or derived from ``large_share`` so that that share of the difficulty model's training
prompts would go large. With the learned model on, scores are ranks among those prompts (for
the model and its heuristic fallback alike), so the threshold is ``1 - large_share``; with
the heuristic alone it is the heuristic's own ``1 - large_share`` quantile on them.

When it applies (``split_pools``): ``routing.auto.enabled: false`` turns it off; naming a
pool (``small``, ``large``) or ``enabled: true`` turns it on; said nothing, it is on when the
policy has no tier rules and exactly two pools whose served models' names state their sizes
(``Qwen2.5-1.5B``, ``Llama-3.1-70B``, ``Mixtral-8x7B``) and the sizes differ. A pool left
unnamed is inferred: the bigger model's pool is the large one; else ``small`` is the default
pool and ``large`` the other of two pools.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.classify.model import DifficultyModel
from gateway.classify.text_model import TextModel

# "1.5B", "70b", "8x7B": a number of billions, maybe times a number of experts, not
# followed by a letter (so "7bit" or "bert" do not count).
_SIZE = re.compile(r"(?:(\d+)x)?(\d+(?:\.\d+)?)[bB](?![a-zA-Z])")


@dataclass(frozen=True, slots=True)
class DifficultySplit:
    small: str
    large: str
    threshold: float  # on the difficulty score

    def pool(self, score: float) -> str:
        return self.large if score >= self.threshold else self.small

    def reason(self, score: float) -> str:
        """``auto:large>=0.70`` or ``auto:small<0.70``, for ``x-gateway-route-reason``."""
        if score >= self.threshold:
            return f"auto:large>={self.threshold:.2f}"
        return f"auto:small<{self.threshold:.2f}"


def model_size(name: str) -> float | None:
    """Billions of parameters a model's name states (``8x7B`` counts 56), if it does."""
    sizes = [
        float(number) * (int(experts) if experts else 1) for experts, number in _SIZE.findall(name)
    ]
    return max(sizes) if sizes else None


def split_pools(
    enabled: bool | None,
    small: str | None,
    large: str | None,
    *,
    sizes: Mapping[str, float | None],
    default_pool: str,
    has_rules: bool,
) -> tuple[str, str] | None:
    """The (small, large) pools of the split, or None when there is no split; ``sizes``
    maps every pool to its model size (None: unknown). ``ValueError`` when the split is asked
    for but its pools cannot be told."""
    by_size = _by_size(sizes)
    if enabled is False:
        return None
    if enabled is None and small is None and large is None:
        return by_size if not has_rules else None
    if small is None and large is None and by_size is not None:
        return by_size
    if small is None:
        small = default_pool if default_pool != large else _other(sizes, large)
    if large is None:
        large = _other(sizes, small)
    if small == large:
        raise ValueError("the small and the large pool must differ")
    return small, large


def _by_size(sizes: Mapping[str, float | None]) -> tuple[str, str] | None:
    if len(sizes) != 2:
        return None
    (a, size_a), (b, size_b) = sizes.items()
    if size_a is None or size_b is None or size_a == size_b:
        return None
    return (a, b) if size_a < size_b else (b, a)


def _other(pools: Mapping[str, object], pool: str | None) -> str:
    """The one pool of two that is not ``pool``."""
    others = [p for p in pools if p != pool]
    if len(others) != 1:
        raise ValueError("name both routing.auto.small and routing.auto.large (not two pools)")
    return others[0]


def split_threshold(
    large_share: float, model: TextModel | DifficultyModel, *, ranked: bool
) -> float:
    """The score threshold that sends ``large_share`` of the model's training prompts to the
    large pool (``ranked``: scores are ranks, the learned model is on)."""
    if ranked:
        return 1.0 - large_share
    points = model.heuristic_quantiles
    # The heuristic score at rank 1 - share, read off its quantiles.
    position = (1.0 - large_share) * (len(points) - 1)
    low = int(position)
    high = min(low + 1, len(points) - 1)
    return points[low] + (position - low) * (points[high] - points[low])
