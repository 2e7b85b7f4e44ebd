"""Difficulty score in [0, 1]: a logistic combination of the features, with its reasons.

Algorithm: ``z = bias + sum(weight[f] * value[f])`` over the features of ``features.py``,
``score = 1 / (1 + exp(-z))``; the request is ``hard`` when ``score >= threshold``. The
contribution of a feature is ``weight * value`` (its share of ``z``); the reasons are the
features with the largest positive contributions, for ``x-gateway-route-reason``.

Default weights (``DifficultyWeights``) were fitted with ``fitting.fit_logistic`` (Newton's
method, L2 penalty 1.0 on the weights, not on the bias) on all 350 prompts of
``tests/data/difficulty_eval.jsonl``: ``python -m gateway.classify.fitting.weights_fit
tests/data/difficulty_eval.jsonl`` prints them. ``tests/unit/classify/test_eval.py`` re-fits
on one half and checks the ROC AUC on the other. ``code`` fits to ~0 because that set has as
many easy as hard code prompts, on purpose: quoting code does not make a task hard.
``output`` (requested max tokens) and ``depth`` (user turns) are constant in that
single-turn set without max_tokens, so the fit leaves them at 0; their weights are set by
hand to a moderate push (an 8k-token budget adds 1.0 to z, a 9-turn conversation 0.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from gateway.classify.features import FEATURE_NAMES, Features

_WEIGHT_VALUES = attrgetter(*FEATURE_NAMES)


@dataclass(frozen=True, slots=True)
class DifficultyWeights:
    """Logistic weights per feature, the bias, and the decision threshold on the score."""

    # Fitted (see the module docstring); output and depth are set by hand.
    bias: float = -2.14
    length: float = 0.56
    ask: float = 3.09
    code: float = 0.05
    math: float = 2.85
    multistep: float = 1.14
    constraints: float = 1.65
    reasoning: float = 4.54
    simple: float = -2.68
    output: float = 1.0
    depth: float = 0.5
    threshold: float = 0.5

    def __post_init__(self) -> None:
        for name in ("bias", *FEATURE_NAMES):
            value = getattr(self, name)
            if not math.isfinite(value) or abs(value) > 50:
                raise ValueError(f"difficulty weight '{name}' must be finite and within +-50")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError("difficulty threshold must be in (0, 1)")

    def vector(self) -> tuple[float, ...]:
        """The feature weights in ``FEATURE_NAMES`` order."""
        return _WEIGHT_VALUES(self)


@dataclass(frozen=True, slots=True)
class Difficulty:
    """The score, the verdict, and each feature's share of the logit."""

    score: float
    hard: bool
    contributions: tuple[tuple[str, float], ...]  # (feature, weight * value), largest first
    source: str = ""  # "model" or "heuristic" when a learned model ranks the score

    def reasons(self, top: int = 2) -> tuple[str, ...]:
        """Names of the ``top`` features that pushed the score up the most."""
        return tuple(name for name, part in self.contributions[:top] if part > 0)


def score_difficulty(
    features: Features, weights: DifficultyWeights = DifficultyWeights()
) -> Difficulty:
    """Score ``features`` with ``weights``."""
    parts = [
        (name, w * x)
        for name, w, x in zip(FEATURE_NAMES, weights.vector(), features.values(), strict=True)
    ]
    z = weights.bias + sum(part for _, part in parts)
    score = _sigmoid(z)
    parts.sort(key=itemgetter(1), reverse=True)
    return Difficulty(score=score, hard=score >= weights.threshold, contributions=tuple(parts))


def _sigmoid(z: float) -> float:
    # Split by sign so exp never overflows.
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def weights_from(bias: float, vector: tuple[float, ...], **overrides: float) -> DifficultyWeights:
    """Build weights from a fitted ``bias`` and ``vector`` (``FEATURE_NAMES`` order)."""
    values = dict(zip(FEATURE_NAMES, vector, strict=True))
    values.update(overrides)
    return DifficultyWeights(bias=bias, **values)
