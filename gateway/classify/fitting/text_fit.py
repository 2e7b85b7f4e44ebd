"""Fitting the text difficulty model (``text_model.py``) on labelled outcomes (offline, numpy).

Input: ``Labelled`` rows (``router_fit.py``: the prompt, how well the small and the large model
did in [0, 1], a row weight). Each prompt is read as one user message, as the gateway reads a
request: its ten cheap features and its terms (``text_terms.py``).

Algorithm:

1. Vocabulary: the terms found in at least ``min_df`` training prompts (document frequency),
   sorted.
2. Columns (feature augmentation for two domains, Daume III, "Frustratingly easy domain
   adaptation", ACL 2007): the ten features, standardised on the training rows (so one
   penalty suits them and the 0/1 term columns), and one 0/1 column per vocabulary term,
   once shared by every prompt and once more per prompt format (``prompt_format.py``),
   filled only on that format's rows; and a column for "multiple-choice". A format's
   weights are its own plus the shared ones: what both formats agree on is learned from
   all rows, what differs from that format's rows.
3. One L2-regularised logistic regression per model (``sparse_logistic.fit``, penalty ``l2``
   on every weight but the bias, soft targets, the row weights): the large model's and the
   small model's chance of doing well. The standardisation is folded back into the weights,
   and term weights are rounded to the file's unit (``TERM_UNIT``).
4. ``quantiles``: the model's raw gains on the training prompts; ``heuristic_quantiles``: the
   heuristic's scores on them.

``cross_validate`` scores settings by k-fold cross-validated APGR on the training rows
(random folds from a fixed seed; APGR per group, such as per benchmark, then averaged, so each
group counts alike whatever its size); model selection uses nothing else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from gateway.classify.difficulty import score_difficulty
from gateway.classify.features import FEATURE_NAMES, Features
from gateway.classify.fitting import sparse_logistic
from gateway.classify.fitting.router_fit import Labelled, prompt_features
from gateway.classify.fitting.routing_quality import router_quality
from gateway.classify.model import quantiles
from gateway.classify.prompt_format import FORMATS, Format, prompt_format
from gateway.classify.text_model import TERM_UNIT, Outcomes, TermOutcome, TextModel
from gateway.classify.text_terms import window, window_terms

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Settings:
    l2: float = 30.0
    min_df: int = 5

    def label(self) -> str:
        return f"l2 {self.l2:g}, min_df {self.min_df}"


@dataclass(frozen=True, slots=True)
class Described:
    """What the fit reads of each prompt: its features, its terms and its format."""

    features: list[Features]
    terms: list[frozenset[bytes]]
    formats: list[Format]

    @classmethod
    def of(cls, prompts: Sequence[str]) -> Described:
        windows = [window(p) for p in prompts]
        return cls(
            prompt_features(prompts),
            [window_terms(w) for w in windows],
            [prompt_format(w) for w in windows],
        )

    def take(self, rows: Sequence[int]) -> Described:
        return Described(
            [self.features[i] for i in rows],
            [self.terms[i] for i in rows],
            [self.formats[i] for i in rows],
        )


@dataclass(frozen=True, slots=True)
class FittedText:
    model: TextModel
    raw: Floats  # the model's raw gain on the training rows


def vocabulary(term_sets: Sequence[frozenset[bytes]], min_df: int) -> tuple[bytes, ...]:
    """The terms present in at least ``min_df`` of the sets, sorted."""
    counts: Counter[bytes] = Counter()
    for found in term_sets:
        counts.update(found)
    return tuple(sorted(term for term, n in counts.items() if n >= min_df))


def fit_text(
    rows: Sequence[Labelled],
    settings: Settings,
    *,
    described: Described | None = None,
    about: str = "",
) -> FittedText:
    """Fit the text model on ``rows`` (``described``: their features and terms, if known)."""
    seen = described if described is not None else Described.of([r.prompt for r in rows])
    vocab = vocabulary(seen.terms, settings.min_df)
    dense = np.asarray([f.values() for f in seen.features], dtype=np.float64)
    dense = dense.reshape(len(rows), len(FEATURE_NAMES))
    mean, scale = dense.mean(axis=0), dense.std(axis=0)
    scale[scale < 1e-12] = 1.0
    x = _design((dense - mean) / scale, seen, vocab)
    weights = np.asarray([r.weight for r in rows], dtype=np.float64)
    fitted = [
        sparse_logistic.fit(x, target, l2=settings.l2, row_weights=weights)
        for target in ([r.strong for r in rows], [r.weak for r in rows])
    ]
    width = len(FEATURE_NAMES) + len(vocab)
    formats = {}
    for position, name in enumerate(FORMATS):
        sides = []
        for regression in fitted:
            shared = regression.weights[1 : 1 + width]
            own = regression.weights[1 + (1 + position) * width : 1 + (2 + position) * width]
            combined = shared + own
            features = combined[: len(FEATURE_NAMES)] / scale
            bias = regression.bias + (regression.weights[0] if name == "choice" else 0.0)
            terms = np.rint(combined[len(FEATURE_NAMES) :] / TERM_UNIT) * TERM_UNIT
            sides.append(TermOutcome(bias - float(features @ mean), features, terms))
        formats[name] = Outcomes(*sides)
    model = TextModel(
        vocabulary=tuple(t.decode("utf-8", "surrogatepass") for t in vocab),
        formats=formats,
        quantiles=quantiles([0.0, 1.0]),  # replaced below, once raw gains are known
        heuristic_quantiles=quantiles([score_difficulty(f).score for f in seen.features]),
        about=about,
    )
    raw = raw_gains(model, [r.prompt for r in rows], seen.features)
    return FittedText(replace(model, quantiles=quantiles(raw)), raw)


def raw_gains(model: TextModel, prompts: Sequence[str], features: Sequence[Features]) -> Floats:
    """The text model's raw gain on each prompt."""
    return np.asarray(
        [model.raw(p, f) for p, f in zip(prompts, features, strict=True)], dtype=np.float64
    )


@dataclass(frozen=True, slots=True)
class CvScore:
    """Held-out APGR of one setting: the mean over folds per group, and their mean."""

    groups: dict[str, float]

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.groups.values())))


def cross_validate(
    rows: Sequence[Labelled],
    candidates: Sequence[Settings],
    *,
    groups: Sequence[str] | None = None,
    folds: int = 5,
    seed: int = 0,
) -> dict[Settings, CvScore]:
    """Each candidate's held-out APGR over ``folds`` random folds, per group."""
    described = Described.of([r.prompt for r in rows])
    labels = np.asarray(groups if groups is not None else [""] * len(rows))
    fold_of = np.random.default_rng(seed).permutation(len(rows)) % folds
    scores: dict[Settings, CvScore] = {}
    for settings in candidates:
        found: dict[str, list[float]] = {}
        for fold in range(folds):
            train = np.flatnonzero(fold_of != fold).tolist()
            fitted = fit_text([rows[i] for i in train], settings, described=described.take(train))
            for group in np.unique(labels).tolist():
                test = np.flatnonzero((fold_of == fold) & (labels == group)).tolist()
                held = [rows[i] for i in test]
                weak, strong = [r.weak for r in held], [r.strong for r in held]
                if sum(strong) <= sum(weak):
                    continue  # no gap to recover here
                predicted = raw_gains(
                    fitted.model, [r.prompt for r in held], described.take(test).features
                )
                apgr = router_quality(predicted.tolist(), weak, strong).apgr
                found.setdefault(str(group), []).append(apgr)
        if not found:
            raise ValueError("no fold where the large model does better: nothing to choose by")
        scores[settings] = CvScore({g: float(np.mean(v)) for g, v in found.items()})
    return scores


def _design(dense: Floats, seen: Described, vocab: tuple[bytes, ...]) -> sparse_logistic.SparseRows:
    """Column 0: the row is a multiple-choice question; then the features and terms shared
    by every format; then a copy of them per format, filled only on that format's rows."""
    n_features = len(FEATURE_NAMES)
    width = n_features + len(vocab)
    index = {term: n_features + i for i, term in enumerate(vocab)}
    rows = []
    for values, found, kind in zip(dense.tolist(), seen.terms, seen.formats, strict=True):
        present = sorted(index[t] for t in found & index.keys())
        own = 1 + (1 + FORMATS.index(kind)) * width
        columns = [1 + j for j in range(n_features)] + [1 + j for j in present]
        columns += [own + j for j in range(n_features)] + [own + j for j in present]
        row_values = (values + [1.0] * len(present)) * 2
        if kind == "choice":
            columns, row_values = [0, *columns], [1.0, *row_values]
        rows.append((columns, row_values))
    return sparse_logistic.SparseRows.of(rows, 1 + (1 + len(FORMATS)) * width)
