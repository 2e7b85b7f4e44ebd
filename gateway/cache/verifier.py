"""The semantic-cache verifier: may the answer cached for question A be served for B?

Algorithm: a logistic model over the pair's features (``features.py``: the cosine, the
embedding-pair features ``|a - b|`` and ``a * b``, word and entity alignment, direction,
operators, antonyms, the guard's facts), standardised with the fit's mean and scale:
``p = sigmoid(w . (x - mean) / scale + b)``. Pairs whose cosine is below ``min_cosine``
are refused without scoring (the fit saw none: the index's candidates below it never reach
the model). The operating threshold on ``p`` comes from the user's ``max_false_hit_rate``
and the calibration curve stored with the weights: the curve holds, for each threshold,
the precision and recall measured on held-out calibration pairs the weights never saw, and
the threshold chosen is the lowest at which the precision of every stricter threshold is
still at least ``1 - max_false_hit_rate`` (so a local bump in the curve cannot pass).
Weights, IDF table and curve ship as one ``.npz`` file (``verifier.npz``, made by
``python -m loadtests.fit_cache_verifier``). Per candidate: one dot product of a ~790-long
vector and the text features of two short texts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.cache.features import TEXT_FEATURES, Idf, View, pair_features
from gateway.embedding import Vectors

Floats = npt.NDArray[np.float64]
DEFAULT_FILE = "verifier.npz"


@dataclass(frozen=True)
class Curve:
    """Precision and recall on the calibration pairs, per threshold (ascending)."""

    thresholds: Floats
    precision: Floats
    recall: Floats

    def threshold_for(self, max_false_hit_rate: float) -> float:
        """The lowest threshold whose precision, and that of every stricter threshold, is
        at least ``1 - max_false_hit_rate``; past the curve's end (no threshold is that
        precise) a threshold above 1, which refuses everything."""
        # Precision of "this threshold or any stricter one": a running minimum from the top.
        floor = np.minimum.accumulate(self.precision[::-1])[::-1]
        ok = np.flatnonzero(floor >= 1.0 - max_false_hit_rate)
        return float(self.thresholds[ok[0]]) if ok.size else 1.0 + 1e-9

    def at(self, threshold: float) -> tuple[float, float]:
        """(precision, recall) on the calibration pairs at ``threshold``."""
        i = int(np.searchsorted(self.thresholds, threshold, side="left"))
        if i >= len(self.thresholds):
            return 1.0, 0.0
        return float(self.precision[i]), float(self.recall[i])


@dataclass(frozen=True)
class Verifier:
    weights: Floats
    bias: float
    mean: Floats
    scale: Floats
    idf: Idf
    min_cosine: float
    curve: Curve
    meta: dict[str, Any] = field(default_factory=dict)

    def probability(self, a: View, b: View, va: Vectors, vb: Vectors) -> float:
        """The model's probability that B may be served A's answer (0 below ``min_cosine``)."""
        if float(np.dot(va, vb)) < self.min_cosine:
            return 0.0
        x = (pair_features(a, b, va, vb, self.idf) - self.mean) / self.scale
        z = float(np.dot(self.weights, x)) + self.bias
        return float(1.0 / (1.0 + np.exp(-z)))

    def save(self, path: Path) -> None:
        words = list(self.idf.table)
        idf = json.dumps({"words": words, "unknown": self.idf.unknown})
        np.savez_compressed(
            path,
            weights=self.weights.astype(np.float32),
            bias=np.float64(self.bias),
            mean=self.mean.astype(np.float32),
            scale=self.scale.astype(np.float32),
            idf_words=_text(idf),
            idf_values=np.array([self.idf.table[w] for w in words], np.float16),
            min_cosine=np.float64(self.min_cosine),
            curve=np.stack([self.curve.thresholds, self.curve.precision, self.curve.recall]),
            meta=_text(json.dumps({**self.meta, "text_features": list(TEXT_FEATURES)})),
        )


def load_verifier(path: str | Path | None = None) -> Verifier:
    """The verifier in ``path``, or the one shipped with the gateway."""
    if path is None:
        with resources.as_file(resources.files("gateway.cache") / DEFAULT_FILE) as shipped:
            return _read(shipped)
    return _read(Path(path))


def _read(path: Path) -> Verifier:
    with np.load(path, allow_pickle=False) as data:
        idf = json.loads(bytes(data["idf_words"]).decode())
        meta = json.loads(bytes(data["meta"]).decode())
        if meta.get("text_features") != list(TEXT_FEATURES):
            raise ValueError(
                f"{path}: fitted for other features; refit with "
                "`python -m loadtests.fit_cache_verifier`"
            )
        values = data["idf_values"].astype(np.float64)
        curve = data["curve"].astype(np.float64)
        return Verifier(
            weights=data["weights"].astype(np.float64),
            bias=float(data["bias"]),
            mean=data["mean"].astype(np.float64),
            scale=data["scale"].astype(np.float64),
            idf=Idf(dict(zip(idf["words"], values.tolist(), strict=True)), float(idf["unknown"])),
            min_cosine=float(data["min_cosine"]),
            curve=Curve(curve[0], curve[1], curve[2]),
            meta=meta,
        )


def _text(value: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(value.encode(), dtype=np.uint8)
