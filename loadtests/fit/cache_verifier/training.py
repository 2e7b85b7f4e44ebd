"""Fitting the semantic-cache verifier: a one-hidden-layer network and its calibration curve.

Algorithm: every pair (QQP fit part, plus the written near-miss training pairs, weighted
``near_miss_weight`` times) whose cosine is at least ``min_cosine`` becomes a feature vector
(``gateway/cache/judgement/pair_features.py``); features are standardised (mean, scale from the
fit pairs) and a network of ``units`` tanh units and a logistic output is fitted on the weighted
log loss plus an L2 penalty ``l2`` on the weights (not the biases), by L-BFGS (scipy, at most
``iterations`` steps, from a seeded random start). IDF comes from the QQP fit texts. The
calibration curve is then measured on the QQP calibration part, in its natural label mix, with
pairs below ``min_cosine`` counted as refused, twice: with the guard's refusals counted as
refused (the default rule) and without: precision and recall at each distinct score (thinned to
at most ``curve_points`` points). Nothing of the QQP test split is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize

from gateway.cache.judgement.guard import refusal
from gateway.cache.judgement.pair_features import Idf, View, pair_features, view_of
from gateway.cache.judgement.verifier import Curve, Floats, Verifier
from gateway.embedding import Vectors
from loadtests.kit.cache_pairs import Pair


@dataclass(frozen=True)
class FitSettings:
    min_cosine: float = 0.6
    units: int = 16
    l2: float = 30.0
    iterations: int = 500
    seed: int = 0
    near_miss_weight: float = 5.0
    curve_points: int = 400
    # A precision measured on fewer hits is noise (one mislabelled pair at the very top
    # would read as 0.5 and veto every threshold below it): such points are left out.
    min_hits: int = 100


@dataclass(frozen=True)
class Embedded:
    """Pairs with both texts' views and vectors (row i of ``va``/``vb`` is pair i)."""

    pairs: Sequence[Pair]
    views: dict[str, View]
    va: Vectors
    vb: Vectors

    @property
    def cosines(self) -> Floats:
        out: Floats = np.einsum("ij,ij->i", self.va, self.vb).astype(np.float64)
        return out

    @property
    def labels(self) -> Floats:
        return np.array([p.label for p in self.pairs], np.float64)

    def features(self, idf: Idf, rows: npt.NDArray[np.intp]) -> Floats:
        return np.stack([self._features(i, idf) for i in rows]).astype(np.float64)

    def _features(self, i: int, idf: Idf) -> Floats:
        a, b = self.views[self.pairs[i].a], self.views[self.pairs[i].b]
        return pair_features(a, b, self.va[i], self.vb[i], idf).astype(np.float64)


def embedded(pairs: Sequence[Pair], vectors_of: dict[str, Vectors]) -> Embedded:
    views = {t: view_of(t) for p in pairs for t in (p.a, p.b)}
    va = np.stack([vectors_of[p.a] for p in pairs])
    vb = np.stack([vectors_of[p.b] for p in pairs])
    return Embedded(pairs, views, va, vb)


@dataclass(frozen=True)
class Network:
    hidden: Floats
    hidden_bias: Floats
    weights: Floats
    bias: float
    mean: Floats
    scale: Floats


def fit_network(x: Floats, y: Floats, weight: Floats, settings: FitSettings) -> Network:
    """A weighted, L2-penalised one-hidden-layer network (tanh units, logistic output)."""
    mean = np.average(x, axis=0, weights=weight)
    scale = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=weight))
    scale[scale < 1e-6] = 1.0  # a constant feature: leave it unscaled (its weights go to 0)
    z = (x - mean) / scale
    n, d = z.shape
    h = settings.units
    share = weight / weight.sum()
    penalty = settings.l2 / n

    def unpack(theta: Floats) -> tuple[Floats, Floats, Floats, float]:
        return (
            theta[: d * h].reshape(d, h),
            theta[d * h : d * h + h],
            theta[d * h + h : d * h + 2 * h],
            float(theta[-1]),
        )

    def loss(theta: Floats) -> tuple[float, Floats]:
        w1, b1, w2, b2 = unpack(theta)
        hidden = np.tanh(z @ w1 + b1)
        margin = hidden @ w2 + b2
        # log(1 + exp(m)) - y m is the log loss of sigmoid(m) for labels in {0, 1}.
        value = share @ (np.logaddexp(0.0, margin) - y * margin)
        value += 0.5 * penalty * (np.sum(w1 * w1) + w2 @ w2)
        g = share * (1.0 / (1.0 + np.exp(-margin)) - y)
        g_hidden = np.outer(g, w2) * (1.0 - hidden * hidden)
        grad = np.concatenate(
            [
                (z.T @ g_hidden + penalty * w1).ravel(),
                g_hidden.sum(axis=0),
                hidden.T @ g + penalty * w2,
                [g.sum()],
            ]
        )
        return float(value), grad

    rng = np.random.default_rng(settings.seed)
    start = np.concatenate(
        [rng.normal(0, d**-0.5, d * h), np.zeros(h), rng.normal(0, h**-0.5, h), [0.0]]
    )
    options = {"maxiter": settings.iterations}
    result = minimize(loss, start, jac=True, method="L-BFGS-B", options=options)
    w1, b1, w2, b2 = unpack(result.x)
    return Network(w1, b1, w2, b2, mean, scale)


def curve_of(scores: Floats, labels: Floats, points: int, min_hits: int = 1) -> Curve:
    """Precision and recall of "score >= t" for thresholds t at the distinct scores that
    leave at least ``min_hits`` hits."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    true = np.cumsum(y)
    hits = np.arange(1, len(y) + 1)
    # The last index of each run of equal scores: "score >= t" takes the whole run.
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    last = last[(s[last] > 0) & (hits[last] >= min_hits)]  # 0: refused below min_cosine
    precision, recall = true[last] / hits[last], true[last] / max(1.0, y.sum())
    keep = np.unique(np.linspace(0, len(last) - 1, min(points, len(last))).astype(int))
    thresholds = s[last][keep]
    return Curve(thresholds[::-1].copy(), precision[keep][::-1].copy(), recall[keep][::-1].copy())


def fit_verifier(
    train: Embedded, calibration: Embedded, idf: Idf, settings: FitSettings, meta: dict[str, object]
) -> Verifier:
    rows = np.flatnonzero(train.cosines >= settings.min_cosine)
    x = train.features(idf, rows)
    y = train.labels[rows]
    weight = np.array(
        [1.0 if train.pairs[int(i)].kind == "qqp" else settings.near_miss_weight for i in rows]
    )
    net = fit_network(x, y, weight, settings)
    parts = (net.hidden, net.hidden_bias, net.weights, net.bias, net.mean, net.scale, idf)
    empty = Curve(np.zeros(1), np.zeros(1), np.zeros(1))
    scores = score_all(Verifier(*parts, settings.min_cosine, empty, empty), calibration)
    vetoed = np.array([refusal(p.a, p.b) is not None for p in calibration.pairs])
    labels, points, min_hits = calibration.labels, settings.curve_points, settings.min_hits
    return Verifier(
        *parts,
        settings.min_cosine,
        curve_of(np.where(vetoed, 0.0, scores), labels, points, min_hits),
        curve_of(scores, labels, points, min_hits),
        dict(meta),
    )


def score_all(model: Verifier, pairs: Embedded) -> Floats:
    return np.array(
        [
            model.probability(pairs.views[p.a], pairs.views[p.b], pairs.va[i], pairs.vb[i])
            for i, p in enumerate(pairs.pairs)
        ]
    )


def old_rule(pairs: Embedded, threshold: float = 0.92) -> tuple[float, float]:
    """(precision, recall) of the old shipped rule, cosine >= ``threshold`` then the guard."""
    hits = (pairs.cosines >= threshold) & np.array([refusal(p.a, p.b) is None for p in pairs.pairs])
    true = float((hits * pairs.labels).sum())
    return true / max(1, int(hits.sum())), true / max(1.0, float(pairs.labels.sum()))
