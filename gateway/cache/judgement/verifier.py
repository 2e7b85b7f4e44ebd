"""The semantic-cache verifier: may the answer cached for question A be served for B?

Algorithm: a small neural network (one hidden layer of ``tanh`` units, a logistic output)
over the pair's features (``pair_features.py``: the cosine, the embedding pair ``|a - b|``,
``a * b`` reduced to five numbers, word and entity alignment, direction, operators,
antonyms, the guard's facts), standardised with the fit's mean and scale:
``p = sigmoid(w2 . tanh(W1^T (x - mean) / scale + b1) + b2)``.
Pairs whose cosine is below ``min_cosine`` are refused without
scoring (the fit saw none: the index's candidates below it never reach the model). The
operating threshold on ``p`` comes from the user's ``max_false_hit_rate`` and the
calibration curve stored with the weights (one with the guard's veto applied first, as
the default rule runs, one without, for ``guard: false``): a curve holds, for each threshold, the
precision and recall measured on held-out calibration pairs the weights never saw, and the
threshold chosen is the lowest at which the precision of every stricter threshold is still
at least ``1 - max_false_hit_rate`` (so a local bump in the curve cannot pass); the curve
starts where at least 100 calibration pairs are hits, below which a precision is noise.
Weights, IDF table and curve ship as one ``.npz`` file (``verifier.npz``, made by
``python -m loadtests.fit.cache_verifier``). Per candidate: a few elementwise operations on
the two vectors, the text features of two short texts, a (27 x 16) matrix-vector product.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.cache.judgement.pair_features import FEATURES, Idf, View, pair_features
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
    hidden: Floats  # W1, (features, units)
    hidden_bias: Floats  # b1, (units,)
    weights: Floats  # w2, (units,)
    bias: float  # b2
    mean: Floats
    scale: Floats
    idf: Idf
    min_cosine: float
    curve: Curve  # calibration with the guard's veto before the verifier (``guard: true``)
    curve_no_guard: Curve  # and without it
    meta: dict[str, Any] = field(default_factory=dict)

    def curve_for(self, guard: bool) -> Curve:
        return self.curve if guard else self.curve_no_guard

    def probability(self, a: View, b: View, va: Vectors, vb: Vectors) -> float:
        """The model's probability that B may be served A's answer (0 below ``min_cosine``)."""
        if float(np.dot(va, vb)) < self.min_cosine:
            return 0.0
        x = (pair_features(a, b, va, vb, self.idf) - self.mean) / self.scale
        z = float(np.dot(self.weights, np.tanh(x @ self.hidden + self.hidden_bias))) + self.bias
        return float(1.0 / (1.0 + np.exp(-z)))

    def save(self, path: Path) -> None:
        words = sorted(self.idf.table)  # a stable file for a stable fit
        idf = json.dumps({"words": words, "unknown": self.idf.unknown})
        np.savez_compressed(
            path,
            hidden=self.hidden.astype(np.float32),
            hidden_bias=self.hidden_bias.astype(np.float32),
            weights=self.weights.astype(np.float32),
            bias=np.float64(self.bias),
            mean=self.mean.astype(np.float32),
            scale=self.scale.astype(np.float32),
            idf_words=_text(idf),
            idf_values=np.array([self.idf.table[w] for w in words], np.float16),
            min_cosine=np.float64(self.min_cosine),
            curve=_stacked(self.curve),
            curve_no_guard=_stacked(self.curve_no_guard),
            meta=_text(json.dumps({**self.meta, "features": list(FEATURES)})),
        )


def load_verifier(path: str | Path | None = None) -> Verifier:
    """The verifier in ``path``, or the one shipped with the gateway."""
    if path is None:
        with resources.as_file(
            resources.files("gateway.cache.judgement") / DEFAULT_FILE
        ) as shipped:
            return _read(shipped)
    return _read(Path(path))


def _read(path: Path) -> Verifier:
    try:
        return _parse(path)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a verifier weights file ({exc})") from exc


def _parse(path: Path) -> Verifier:
    with np.load(path, allow_pickle=False) as data:
        idf = json.loads(bytes(data["idf_words"]).decode())
        meta = json.loads(bytes(data["meta"]).decode())
        if meta.get("features") != list(FEATURES):
            raise ValueError(
                f"{path}: fitted for other features; refit with "
                "`python -m loadtests.fit.cache_verifier`"
            )
        values = data["idf_values"].astype(np.float64)
        return Verifier(
            hidden=data["hidden"].astype(np.float64),
            hidden_bias=data["hidden_bias"].astype(np.float64),
            weights=data["weights"].astype(np.float64),
            bias=float(data["bias"]),
            mean=data["mean"].astype(np.float64),
            scale=data["scale"].astype(np.float64),
            idf=Idf(dict(zip(idf["words"], values.tolist(), strict=True)), float(idf["unknown"])),
            min_cosine=float(data["min_cosine"]),
            curve=_unstacked(data["curve"]),
            curve_no_guard=_unstacked(data["curve_no_guard"]),
            meta=meta,
        )


def _stacked(curve: Curve) -> Floats:
    return np.stack([curve.thresholds, curve.precision, curve.recall])


def _unstacked(rows: npt.NDArray[Any]) -> Curve:
    rows = rows.astype(np.float64)
    return Curve(rows[0], rows[1], rows[2])


def _text(value: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(value.encode(), dtype=np.uint8)
