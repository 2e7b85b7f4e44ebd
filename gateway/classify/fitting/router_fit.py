"""Fitting the learned difficulty model (``model.py``) on labelled outcomes (offline).

Input, one JSON object per line: ``prompt`` and either ``weak_ok`` / ``strong_ok`` (did the
small and the large model answer well, booleans) or ``weak_score`` / ``strong_score`` (any
numeric scale, e.g. a judge's 1-10), optionally ``weight``. Each model's outcome becomes a
target in [0, 1]: the boolean, or the score rescaled by the range of the scores in the file.

Algorithm: columns = the prompt's embedding (the gateway's encoder) and its ten cheap
features (as the gateway computes them for a single user message); one standardised
L2-regularised logistic regression per model (``logistic.fit``, penalty ``l2``, targets in
[0, 1] as soft labels), so the model's raw value is the expected gain
``P(large does well) - P(small does well)``. ``choose_l2`` picks the penalty by k-fold
cross-validated APGR on the training rows. The model's ``quantiles`` are its raw values on
the training prompts, ``heuristic_quantiles`` the heuristic's scores on them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gateway.classify.classifier import request_features
from gateway.classify.difficulty import score_difficulty
from gateway.classify.features import FEATURE_NAMES, Features
from gateway.classify.fitting import logistic
from gateway.classify.fitting.routing_quality import router_quality
from gateway.classify.model import DifficultyModel, Success, quantiles
from gateway.embedding.encoder import Encoder, Vectors

Matrix = npt.NDArray[np.float64]
# Penalties ``fit-router`` tries (standardised columns; row weights as given, 1 by default).
L2_CANDIDATES = (10.0, 30.0, 100.0, 300.0, 1000.0)


@dataclass(frozen=True, slots=True)
class Labelled:
    prompt: str
    weak: float  # how well the small model did, in [0, 1]
    strong: float  # how well the large model did, in [0, 1]
    weight: float = 1.0


def read_outcomes(path: str | Path) -> list[Labelled]:
    """The labelled lines of ``path``; ``ValueError`` names the first bad line."""
    rows: list[Labelled] = []
    kinds: set[str] = set()
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            kind, row = _outcome(json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        kinds.add(kind)
        rows.append(row)
    if len(kinds) > 1:
        raise ValueError(f"{path}: mixes weak_ok/strong_ok lines with weak_score/strong_score")
    if not rows:
        raise ValueError(f"{path}: no labelled lines")
    if kinds == {"ok"}:
        return rows
    low = min(min(r.weak, r.strong) for r in rows)
    span = max(max(r.weak, r.strong) for r in rows) - low
    if span <= 0:
        raise ValueError(f"{path}: every score is the same, nothing to learn")
    return [
        Labelled(r.prompt, (r.weak - low) / span, (r.strong - low) / span, r.weight) for r in rows
    ]


def _outcome(row: object) -> tuple[str, Labelled]:
    if not isinstance(row, dict):
        raise ValueError("each line must be a JSON object")
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("'prompt' must be a non-empty string")
    weight = row.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
        raise ValueError("'weight' must be a positive number")
    if "weak_ok" in row or "strong_ok" in row:
        weak, strong = row.get("weak_ok"), row.get("strong_ok")
        if not isinstance(weak, bool) or not isinstance(strong, bool):
            raise ValueError("'weak_ok' and 'strong_ok' must both be true or false")
        return "ok", Labelled(prompt, float(weak), float(strong), float(weight))
    pair = [row.get("weak_score"), row.get("strong_score")]
    numbers = [float(v) for v in pair if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != 2:
        raise ValueError("need weak_ok and strong_ok, or weak_score and strong_score (numbers)")
    return "score", Labelled(prompt, numbers[0], numbers[1], float(weight))


def embed_all(encoder: Encoder, prompts: Sequence[str], batch: int = 64) -> Vectors:
    """The embeddings of ``prompts``, encoded ``batch`` at a time (one batch pads every
    text to its longest, so a whole file at once would take a lot of memory)."""
    parts = [encoder.encode(prompts[i : i + batch]) for i in range(0, len(prompts), batch)]
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), dtype=np.float32)


def prompt_features(prompts: Sequence[str]) -> list[Features]:
    """The ten cheap features of each prompt, asked as one user message."""
    return [request_features([{"role": "user", "content": p}]) for p in prompts]


def columns(vectors: npt.ArrayLike, features: Sequence[Features]) -> Matrix:
    rows = np.asarray([f.values() for f in features], dtype=np.float64)
    rows = rows.reshape(len(features), len(FEATURE_NAMES))
    return np.hstack([np.asarray(vectors, dtype=np.float64), rows])


@dataclass(frozen=True, slots=True)
class Fitted:
    model: DifficultyModel
    raw: Matrix  # the model's raw gain on the training rows


def fit_model(
    rows: Sequence[Labelled], vectors: npt.ArrayLike, *, l2: float, about: str = ""
) -> Fitted:
    """Fit the model on ``rows`` whose embeddings are ``vectors`` (same order)."""
    described = prompt_features([r.prompt for r in rows])
    x = columns(vectors, described)
    weights = np.asarray([r.weight for r in rows], dtype=np.float64)
    dim = x.shape[1] - len(FEATURE_NAMES)
    models = []
    for target in ([r.strong for r in rows], [r.weak for r in rows]):
        fitted = logistic.fit(x, np.asarray(target), l2=l2, row_weights=weights, standardize=True)
        models.append(Success(fitted.bias, fitted.weights[:dim], fitted.weights[dim:]))
    large, small = models
    raw = gains(large, small, x)
    model = DifficultyModel(
        large=large,
        small=small,
        quantiles=quantiles(raw),
        heuristic_quantiles=quantiles([score_difficulty(f).score for f in described]),
        about=about,
    )
    return Fitted(model, raw)


def gains(large: Success, small: Success, x: Matrix) -> Matrix:
    """The expected gain of the large model on each row of columns ``x``."""
    p_large = logistic.sigmoid(large.bias + x @ np.r_[large.embedding, large.features])
    p_small = logistic.sigmoid(small.bias + x @ np.r_[small.embedding, small.features])
    gain: Matrix = p_large - p_small
    return gain


def choose_l2(
    rows: Sequence[Labelled],
    vectors: npt.ArrayLike,
    candidates: Sequence[float],
    *,
    folds: int = 3,
    groups: Sequence[str] | None = None,
) -> tuple[float, dict[float, float]]:
    """The penalty with the best held-out APGR over ``folds`` folds, and each one's mean;
    with ``groups`` (say, the benchmark of each row) APGR is taken per group and averaged,
    so each group counts alike whatever its size."""
    vectors = np.asarray(vectors)
    x = columns(vectors, prompt_features([r.prompt for r in rows]))
    labels = np.asarray(groups if groups is not None else [""] * len(rows))
    fold_of = np.arange(len(rows)) % folds  # a fixed fold per position
    means: dict[float, float] = {}
    for l2 in candidates:
        scores = []
        for fold in range(folds):
            train = np.flatnonzero(fold_of != fold)
            fitted = fit_model([rows[int(i)] for i in train], vectors[train], l2=l2)
            for group in np.unique(labels):
                test = np.flatnonzero((fold_of == fold) & (labels == group))
                predicted = gains(fitted.model.large, fitted.model.small, x[test])
                held = [rows[int(i)] for i in test]
                weak, strong = [r.weak for r in held], [r.strong for r in held]
                if sum(strong) > sum(weak):  # else there is no gap to recover here
                    scores.append(router_quality(predicted.tolist(), weak, strong).apgr)
        if not scores:
            raise ValueError("no fold where the large model does better: nothing to choose by")
        means[l2] = float(np.mean(scores))
    return max(means, key=means.__getitem__), means
