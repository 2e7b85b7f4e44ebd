"""Distilling the embedding part's opinion into word weights (offline, numpy).

The learned model's embedding part (``text_model.EmbeddingPart``, two logistic regressions
over a prompt's MiniLM embedding and ten cheap features) needs an embedding per request. Its
imitation from words needs none: two logistic regressions over the ten features and the
prompt's terms (``text_terms.py``), fitted to the embedding part's probabilities as soft
targets (knowledge distillation: the cross-entropy to the teacher's probabilities, Hinton et
al., "Distilling the knowledge in a neural network", 2015) on a corpus of prompts that need
no outcomes, so it can be far larger and broader than the outcome tables.

Algorithm: vocabulary = the corpus terms found in at least ``min_df`` prompts; columns = the
ten features standardised on the corpus and one 0/1 column per term; ``sparse_logistic.fit``
with penalty ``l2`` per model. ``fidelity`` is the Spearman rank correlation between the
imitation's and the teacher's expected gains on held-out prompts: the imitation ranks
prompts, so ranks are what it must reproduce. ``merge`` puts the imitation into a text model,
over the union of both vocabularies (a term a part never saw weighs 0 in it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gateway.classify.features import FEATURE_NAMES, Features
from gateway.classify.fitting import logistic, sparse_logistic
from gateway.classify.fitting.text_fit import vocabulary
from gateway.classify.text_model import TERM_UNIT, Outcomes, TermOutcome, TextModel

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Imitation:
    vocabulary: tuple[bytes, ...]
    outcomes: Outcomes

    def gains(self, features: Sequence[Features], terms: Sequence[frozenset[bytes]]) -> Floats:
        """The imitation's expected gain on each prompt."""
        x = _design(_dense(features), terms, self.vocabulary)
        large, small = self.outcomes.large, self.outcomes.small
        p_large = logistic.sigmoid(large.bias + x.dot(np.r_[large.features, large.terms]))
        p_small = logistic.sigmoid(small.bias + x.dot(np.r_[small.features, small.terms]))
        gain: Floats = p_large - p_small
        return gain


def fit_imitation(
    features: Sequence[Features],
    terms: Sequence[frozenset[bytes]],
    teacher: npt.ArrayLike,
    *,
    l2: float,
    min_df: int,
    row_weights: npt.ArrayLike | None = None,
) -> Imitation:
    """Fit the imitation of ``teacher`` (per prompt: the probabilities that the large and the
    small model do well, shape (n, 2)) on prompts described by ``features`` and ``terms``,
    each prompt's cross-entropy weighted by ``row_weights`` (default 1)."""
    targets = np.asarray(teacher, dtype=np.float64)
    if targets.shape != (len(features), 2):
        raise ValueError("need the teacher's two probabilities for every prompt")
    rows = None if row_weights is None else np.asarray(row_weights, dtype=np.float64)
    if rows is not None and (rows.shape != (len(features),) or np.any(rows <= 0)):
        raise ValueError("need one positive weight per prompt")
    vocab = vocabulary(terms, min_df)
    dense = _dense(features)
    mean, scale = dense.mean(axis=0), dense.std(axis=0)
    scale[scale < 1e-12] = 1.0
    x = _design((dense - mean) / scale, terms, vocab)
    sides = []
    for column in (0, 1):
        fitted = sparse_logistic.fit(x, targets[:, column], l2=l2, row_weights=rows)
        weights = fitted.weights[: len(FEATURE_NAMES)] / scale
        bias = fitted.bias - float(weights @ mean)
        words = np.rint(fitted.weights[len(FEATURE_NAMES) :] / TERM_UNIT) * TERM_UNIT
        sides.append(TermOutcome(bias, weights, words))
    return Imitation(vocab, Outcomes(*sides))


def fidelity(imitation: Floats, teacher: npt.ArrayLike) -> float:
    """Spearman rank correlation between the imitation's gains and the teacher's (the
    teacher's as ``(n, 2)`` probabilities)."""
    targets = np.asarray(teacher, dtype=np.float64)
    return float(np.corrcoef(_ranks(imitation), _ranks(targets[:, 0] - targets[:, 1]))[0, 1])


def merge(model: TextModel, imitation: Imitation) -> TextModel:
    """``model`` with ``imitation`` as its distilled part, over both vocabularies."""
    own = [t.encode("utf-8", "surrogatepass") for t in model.vocabulary]
    union = sorted(set(own) | set(imitation.vocabulary))
    position = {term: i for i, term in enumerate(union)}

    def spread(terms: Floats, vocab: Sequence[bytes]) -> Floats:
        out = np.zeros(len(union))
        out[[position[t] for t in vocab]] = terms
        return out

    def widened(outcomes: Outcomes, vocab: Sequence[bytes]) -> Outcomes:
        return Outcomes(
            *(
                replace(side, terms=spread(side.terms, vocab))
                for side in (outcomes.large, outcomes.small)
            )
        )

    return replace(
        model,
        vocabulary=tuple(t.decode("utf-8", "surrogatepass") for t in union),
        formats={name: widened(o, own) for name, o in model.formats.items()},
        distilled=widened(imitation.outcomes, imitation.vocabulary),
    )


def _dense(features: Sequence[Features]) -> Floats:
    rows = np.asarray([f.values() for f in features], dtype=np.float64)
    return rows.reshape(len(features), len(FEATURE_NAMES))


def _design(
    dense: Floats, terms: Sequence[frozenset[bytes]], vocab: Sequence[bytes]
) -> sparse_logistic.SparseRows:
    n_features = len(FEATURE_NAMES)
    index = {term: n_features + i for i, term in enumerate(vocab)}
    rows = []
    for values, found in zip(dense.tolist(), terms, strict=True):
        present = sorted(index[t] for t in found & index.keys())
        rows.append(([*range(n_features), *present], values + [1.0] * len(present)))
    return sparse_logistic.SparseRows.of(rows, n_features + len(vocab))


def _ranks(values: Floats) -> Floats:
    """Ranks 0..n-1, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    unique, inverse = np.unique(values, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse] if len(unique) < len(values) else ranks
