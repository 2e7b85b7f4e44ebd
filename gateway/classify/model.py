"""The learned difficulty model: how much the large model is likely to gain over the small
one on a request, from features the gateway already has (the sentence embedding and the
cheap text features).

Algorithm: two logistic regressions over the same columns, ``x`` = the request's unit
embedding ``v`` (all-MiniLM-L6-v2, 384-d, the vector the semantic cache uses) and its ten
cheap features ``f`` (``features.py``): ``P(large does well) = sigmoid(b_L + x . w_L)`` and
``P(small does well) = sigmoid(b_S + x . w_S)``, fitted by ``router_fit.py``. The raw value
is the expected gain ``P(large) - P(small)`` in [-1, 1]: the order in which sending requests
to the large pool recovers most quality. The score the gateway routes on is the *rank* of
the raw value among the training prompts' raw values (``quantiles``: the raw value at 0%,
1%, ..., 100% of them, interpolated linearly), so a score of 0.8 means "more to gain than on
80% of the training prompts", and sending the top share ``s`` to the large pool is the
threshold ``1 - s`` (on traffic like the training data; ``latency-gateway route`` shows it
on yours). The reasons are each column group's share of the linearised gain,
``(p_L(1 - p_L) w_L - p_S(1 - p_S) w_S) * x``, with the embedding as one group.

Without a vector (embeddings off, the model still loading, a slow embedding, a request with
no text to embed) the heuristic score of ``difficulty.py`` is ranked the same way against
``heuristic_quantiles`` (the heuristic's values on the same prompts): the fallback keeps
the same scale and the same share of hard requests, with the heuristic's weaker ranking.

The weights file is JSON (``to_json``); the bundled one (``data/difficulty_model.json``) is
fitted on the training halves of RouteLLM's MMLU and GSM8K outcomes
(``python -m loadtests.fit.router_weights``). Scoring costs two 394-term dot products.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from importlib import resources
from itertools import pairwise
from operator import itemgetter, mul
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.classify.difficulty import Difficulty
from gateway.classify.features import FEATURE_NAMES, Features

Vector = npt.NDArray[np.float32]
Weights = npt.NDArray[np.float64]
FORMAT = "latency-gateway difficulty model 1"
QUANTILE_POINTS = 101  # 0%, 1%, ..., 100%
# The encoder reads 256 word pieces at most: a longer text to embed for routing is cut here,
# since the rest would only cost tokenizing time.
ROUTING_TEXT_CHARS = 4096


def check_logistic(bias: float, features: Weights, *rest: Weights) -> None:
    """A logistic regression's weights: one per cheap feature, all finite (else ValueError)."""
    if len(features) != len(FEATURE_NAMES):
        raise ValueError(f"need {len(FEATURE_NAMES)} feature weights ({FEATURE_NAMES})")
    if not np.isfinite(bias) or not all(np.all(np.isfinite(w)) for w in (features, *rest)):
        raise ValueError("weights must be finite")


def feature_weights(data: Any) -> Weights:
    """A stored model's weights of FEATURE_NAMES, in that order (ValueError if one is missing)."""
    features = data["features"]
    missing = [name for name in FEATURE_NAMES if name not in features]
    if missing:
        raise ValueError(f"feature weights missing: {missing}")
    return np.asarray([float(features[n]) for n in FEATURE_NAMES], dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Success:
    """One logistic regression: how likely a model does well on a request."""

    bias: float
    embedding: Weights  # weights of the embedding's components
    features: Weights  # weights of FEATURE_NAMES, in that order

    def __post_init__(self) -> None:
        check_logistic(self.bias, self.features, self.embedding)

    def to_json(self) -> dict[str, Any]:
        return {
            "bias": self.bias,
            "features": dict(zip(FEATURE_NAMES, _rounded(self.features), strict=True)),
            "embedding": _rounded(self.embedding),
        }

    @classmethod
    def from_json(cls, data: Any) -> Success:
        return cls(
            bias=float(data["bias"]),
            embedding=np.asarray(data["embedding"], dtype=np.float64),
            features=feature_weights(data),
        )


@dataclass(frozen=True, eq=False)
class DifficultyModel:
    large: Success  # does the large model do well
    small: Success  # does the small model do well
    quantiles: tuple[float, ...]  # raw gains at 0%, 1%, ..., 100% of the training prompts
    heuristic_quantiles: tuple[float, ...]  # heuristic scores, same prompts, same points
    about: str = ""  # what it was fitted on
    _embeddings: npt.NDArray[np.float32] = field(init=False, repr=False)
    _features: tuple[tuple[float, ...], tuple[float, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.large.embedding.shape != self.small.embedding.shape:
            raise ValueError("both outcome models need the same embedding size")
        # Laid out once for scoring: one float32 product for both embedding dot products.
        embeddings = np.stack([self.large.embedding, self.small.embedding]).astype(np.float32)
        object.__setattr__(self, "_embeddings", embeddings)
        features = (tuple(self.large.features.tolist()), tuple(self.small.features.tolist()))
        object.__setattr__(self, "_features", features)
        for name in ("quantiles", "heuristic_quantiles"):
            values = getattr(self, name)
            if len(values) != QUANTILE_POINTS or any(b < a for a, b in pairwise(values)):
                raise ValueError(f"{name} must be {QUANTILE_POINTS} non-decreasing values")

    @property
    def dim(self) -> int:
        return len(self.large.embedding)

    def score(self, features: Features, vector: Vector, threshold: float) -> Difficulty:
        """The ranked score of a request whose embedding is ``vector``."""
        if vector.shape != self.large.embedding.shape:
            raise ValueError(f"the model needs {self.dim}-d embeddings, got {vector.shape}")
        along_large, along_small = (self._embeddings @ vector).tolist()
        x = features.values()
        w_large, w_small = self._features
        p_large = _sigmoid(self.large.bias + along_large + sum(map(mul, w_large, x)))
        p_small = _sigmoid(self.small.bias + along_small + sum(map(mul, w_small, x)))
        score = rank(p_large - p_small, self.quantiles)
        slope_large, slope_small = p_large * (1 - p_large), p_small * (1 - p_small)
        parts = [("embedding", slope_large * along_large - slope_small * along_small)]
        parts += [
            (name, (slope_large * a - slope_small * b) * value)
            for name, a, b, value in zip(FEATURE_NAMES, w_large, w_small, x, strict=True)
        ]
        parts.sort(key=itemgetter(1), reverse=True)
        return Difficulty(score, score >= threshold, tuple(parts), source="model")

    def fallback(self, heuristic: Difficulty, threshold: float) -> Difficulty:
        """The heuristic's score ranked like the model's (no embedding for this request)."""
        score = rank(heuristic.score, self.heuristic_quantiles)
        return replace(heuristic, score=score, hard=score >= threshold, source="heuristic")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "about": self.about,
            "large": self.large.to_json(),
            "small": self.small.to_json(),
            "quantiles": _rounded(np.asarray(self.quantiles)),
            "heuristic_quantiles": _rounded(np.asarray(self.heuristic_quantiles)),
        }

    @classmethod
    def from_json(cls, data: Any) -> DifficultyModel:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a difficulty model file (want format {FORMAT!r})")
        try:
            return cls(
                large=Success.from_json(data["large"]),
                small=Success.from_json(data["small"]),
                quantiles=tuple(float(q) for q in data["quantiles"]),
                heuristic_quantiles=tuple(float(q) for q in data["heuristic_quantiles"]),
                about=str(data.get("about", "")),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed difficulty model file: {exc!r}") from None


def load_model(path: str | Path | None = None) -> DifficultyModel:
    """The model in ``path``, or the bundled one; ``ValueError`` says what is wrong."""
    try:
        if path is None:
            text = resources.files("gateway.classify").joinpath("data/difficulty_model.json")
            raw = text.read_text(encoding="utf-8")
        else:
            raw = Path(path).read_text(encoding="utf-8")
        data = json.loads(raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read difficulty model {path or '(bundled)'}: {exc}") from None
    return DifficultyModel.from_json(data)


def quantiles(values: npt.ArrayLike) -> tuple[float, ...]:
    """``values`` at 0%, 1%, ..., 100% (for a model's ``quantiles``)."""
    points = np.quantile(np.asarray(values, dtype=np.float64), np.linspace(0, 1, QUANTILE_POINTS))
    return tuple(float(q) for q in points)


def rank(value: float, points: tuple[float, ...]) -> float:
    """Where ``value`` falls among the quantile ``points``, in [0, 1]; a value equal to a run
    of equal points takes the middle of the run."""
    last = len(points) - 1
    low = bisect_left(points, value)
    high = bisect_right(points, value)
    if high > low:  # equal to points[low:high]
        return (low + high - 1) / 2 / last
    if low == 0:
        return 0.0
    if low > last:
        return 1.0
    below, above = points[low - 1], points[low]
    return (low - 1 + (value - below) / (above - below)) / last


def _rounded(values: Weights) -> list[float]:
    # Six significant digits: the file stays small and the scores move by under 1e-5.
    return [float(f"{v:.6g}") for v in values.tolist()]


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
