"""Toy text difficulty models for tests: a few terms, weights chosen by hand."""

from __future__ import annotations

import numpy as np

from gateway.classify.features import FEATURE_NAMES
from gateway.classify.model import Success
from gateway.classify.text_model import EmbeddingPart, Outcomes, TermOutcome, TextModel

EVEN = tuple(i / 100 for i in range(101))
# Raw gains in [-1, 1] spread evenly: rank(g) = (1 + g) / 2.
GAINS = tuple(2 * p - 1 for p in EVEN)
VOCABULARY = ("alpha", "beta", "prove it")


def outcome(bias: float, terms: tuple[float, float, float], math: float = 0.0) -> TermOutcome:
    features = np.asarray([math if name == "math" else 0.0 for name in FEATURE_NAMES])
    return TermOutcome(bias, features, np.asarray(terms, dtype=np.float64))


def toy_model(*, distilled: bool = False, embedding: bool = False) -> TextModel:
    """The large model always does well (bias 5). The small one does well too, except:
    free-form asks with "alpha" or "prove it", multiple-choice asks with "beta"."""
    formats = {
        "choice": Outcomes(outcome(5.0, (0, 0, 0)), outcome(5.0, (0, -10.0, 0))),
        "free": Outcomes(outcome(5.0, (0, 0, 0)), outcome(5.0, (-10.0, 0, -10.0))),
    }
    imitation = None
    if distilled:  # the small model's chance falls with "beta", whatever the format
        imitation = Outcomes(outcome(5.0, (0, 0, 0)), outcome(5.0, (0, -10.0, 0)))
    part = None
    if embedding:  # the small model fails along e0
        zeros = np.zeros(len(FEATURE_NAMES))
        part = EmbeddingPart(
            Success(5.0, np.zeros(2), zeros),
            Success(5.0, np.asarray([-10.0, 0.0]), zeros),
            GAINS,
        )
    return TextModel(VOCABULARY, formats, GAINS, EVEN, imitation, part, "toy")
