"""The default learned difficulty model: how much the large model is likely to gain over the
small one on a request, from its text alone (no embedding), with the request's sentence
embedding as an optional second opinion.

Algorithm: per prompt format (``prompt_format.py``: ``choice`` for multiple-choice questions,
``free`` for anything else), two logistic regressions over the ten cheap features ``f``
(``features.py``) and the presence of each vocabulary term ``t`` (the words and adjacent word
pairs of ``text_terms.py``): ``P(large does well) = sigmoid(b_L + f . u_L + sum of w_L[t] over
the request's terms)``, and alike for the small model. The raw value is the expected gain
``P(large) - P(small)`` in [-1, 1]. The score the gateway routes on is the *rank* of the raw
value among the training prompts' raw values (``quantiles``: the raw value at 0%, 1%, ..., 100%
of them, interpolated linearly, as in ``model.py``), so sending the top share ``s`` of
requests to the large pool is the threshold ``1 - s`` on traffic like the training data.

Distilled part (optional, ``distilled``): an imitation, from words, of the embedding part
below: two logistic regressions of the same form as the text's (features and terms, one
format), fitted to the embedding part's probabilities on a corpus of prompts
(``fitting/distill.py``). Its expected gain is added to the text's (an equal-weight sum); the sum is
the raw value, ranked against ``quantiles`` (that sum on the training prompts).

Embedding part (optional, ``embedding``): the two logistic regressions of ``model.py`` over the
request's MiniLM embedding and the ten features (the embedding-only model of issue 22). Given
a vector for the request (``classify.model.embedding: true``), the raw value is this part's
expected gain alone, ranked against ``embedding.quantiles`` (its gains on the same training
prompts): measured on held-out data it transfers better to chat-like requests and worse to
MMLU- and GSM8K-like ones than the text parts, and adding the two did not beat the text parts
(README, "Routing quality"). Both ways rank on the same prompts, so a share means the same.

Reasons: each column group's share of the linearised gain, ``(p_L(1 - p_L) w_L - p_S(1 - p_S)
w_S) * x``, summed over the parts used: one per cheap feature, ``words`` for all terms
together, ``embedding``.

Cost: the window's words (bounded, ``text_terms.py``; the features' split when the caller
passes it), its format (two regex scans), one dictionary lookup per distinct word and per
adjacent pair (``map`` over the words and over ``zip`` of them and their successors: no Python
call per word, and zip reuses its tuple, so nothing is allocated per pair), one sum over the
rows found, in row order (the same bits whatever the hash seed), and four 10-term dot products;
with a vector, two 384-term and two 10-term dot products instead.
``heuristic_quantiles`` (the heuristic's scores on the training prompts) let the split derive
a threshold when the policy turns the model off. Files are JSON (``to_json``), gzip-compressed
or not; term weights are integers in units of ``TERM_UNIT``. The bundled one is
``data/difficulty_text_model.json.gz``.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from itertools import pairwise, repeat
from operator import itemgetter, mul
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.classify.difficulty import Difficulty
from gateway.classify.features import FEATURE_NAMES, Features
from gateway.classify.model import (
    QUANTILE_POINTS,
    Success,
    Vector,
    check_logistic,
    feature_weights,
    rank,
)
from gateway.classify.prompt_format import FORMATS, Format, prompt_format
from gateway.classify.scanning import Text, text_of
from gateway.classify.text_terms import term_key, window

Weights = npt.NDArray[np.float64]
FORMAT = "latency-gateway difficulty model 2"
BUNDLED = "data/difficulty_text_model.json.gz"
TERM_UNIT = 1e-4  # term weights are stored as integers in this unit


@dataclass(frozen=True, eq=False)
class TermOutcome:
    """One logistic regression over the cheap features and the vocabulary's terms."""

    bias: float
    features: Weights  # one per FEATURE_NAMES
    terms: Weights  # one per vocabulary term

    def __post_init__(self) -> None:
        check_logistic(self.bias, self.features, self.terms)

    def to_json(self) -> dict[str, Any]:
        return {
            "bias": float(f"{self.bias:.6g}"),
            "features": dict(zip(FEATURE_NAMES, _rounded(self.features), strict=True)),
            "terms": np.rint(self.terms / TERM_UNIT).astype(np.int64).tolist(),
        }

    @classmethod
    def from_json(cls, data: Any) -> TermOutcome:
        return cls(
            bias=float(data["bias"]),
            features=feature_weights(data),
            terms=np.asarray(data["terms"], dtype=np.float64) * TERM_UNIT,
        )


@dataclass(frozen=True, eq=False)
class Outcomes:
    """The two regressions of one prompt format: does the large, does the small model do
    well."""

    large: TermOutcome
    small: TermOutcome

    def to_json(self) -> dict[str, Any]:
        return {"large": self.large.to_json(), "small": self.small.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> Outcomes:
        return cls(TermOutcome.from_json(data["large"]), TermOutcome.from_json(data["small"]))


@dataclass(frozen=True, eq=False)
class EmbeddingPart:
    """The regressions over the embedding and the scale of their expected gain."""

    large: Success
    small: Success
    quantiles: tuple[float, ...]  # this part's expected gains on the training prompts
    _matrix: npt.NDArray[np.float32] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.large.embedding.shape != self.small.embedding.shape:
            raise ValueError("both outcome models need the same embedding size")
        _check_quantiles("embedding.quantiles", self.quantiles)
        matrix = np.stack([self.large.embedding, self.small.embedding]).astype(np.float32)
        object.__setattr__(self, "_matrix", matrix)

    @property
    def dim(self) -> int:
        return len(self.large.embedding)

    def outcomes(self, x: tuple[float, ...], vector: Vector) -> tuple[float, float, float, float]:
        """``(p_large, p_small, along_large, along_small)``: both probabilities and the
        embedding's share of each logit."""
        if vector.shape != self.large.embedding.shape:
            raise ValueError(f"the model needs {self.dim}-d embeddings, got {vector.shape}")
        along_large, along_small = (self._matrix @ vector).tolist()
        z_large = self.large.bias + along_large + sum(map(mul, self.large.features.tolist(), x))
        z_small = self.small.bias + along_small + sum(map(mul, self.small.features.tolist(), x))
        return _sigmoid(z_large), _sigmoid(z_small), along_large, along_small

    def to_json(self) -> dict[str, Any]:
        return {
            "large": self.large.to_json(),
            "small": self.small.to_json(),
            "quantiles": _rounded(np.asarray(self.quantiles)),
        }

    @classmethod
    def from_json(cls, data: Any) -> EmbeddingPart:
        return cls(
            Success.from_json(data["large"]),
            Success.from_json(data["small"]),
            tuple(float(q) for q in data["quantiles"]),
        )


@dataclass(frozen=True, eq=False)
class TextModel:
    vocabulary: tuple[str, ...]  # the terms, in the order of TermOutcome.terms
    formats: dict[Format, Outcomes]  # the outcome regressions of each prompt format
    quantiles: tuple[float, ...]  # raw gains at 0%, 1%, ..., 100% of the training prompts
    heuristic_quantiles: tuple[float, ...]  # heuristic scores, same prompts, same points
    distilled: Outcomes | None = None  # the embedding part's imitation from words
    embedding: EmbeddingPart | None = None
    about: str = ""  # what it was fitted on
    _words: dict[bytes, int] = field(init=False, repr=False)  # a word term's row
    _pairs: dict[tuple[bytes, bytes], int] = field(init=False, repr=False)  # a pair's row
    _linear: dict[Format, _Linear] = field(init=False, repr=False)
    _distilled: _Linear | None = field(init=False, repr=False)
    _columns: Weights = field(init=False, repr=False)  # (terms, 2 per part)

    def __post_init__(self) -> None:
        size = len(self.vocabulary)
        if set(self.formats) != set(FORMATS):
            raise ValueError(f"need the regressions of every format {FORMATS}")
        columns = [c for part in self._parts() for c in (part.large.terms, part.small.terms)]
        if any(len(c) != size for c in columns):
            raise ValueError(f"need one weight per vocabulary term ({size}) in every regression")
        index = {
            term_key(term.encode("utf-8", "surrogatepass")): i
            for i, term in enumerate(self.vocabulary)
        }
        if len(index) != size:
            raise ValueError("the vocabulary repeats a term")
        _check_quantiles("quantiles", self.quantiles)
        _check_quantiles("heuristic_quantiles", self.heuristic_quantiles)
        # Words and pairs apart: a pair's lookup probes a smaller table.
        object.__setattr__(self, "_words", {k: i for k, i in index.items() if isinstance(k, bytes)})
        pairs = {k: i for k, i in index.items() if isinstance(k, tuple)}
        object.__setattr__(self, "_pairs", pairs)
        linear = {name: _linear(self.formats[name]) for name in FORMATS}
        object.__setattr__(self, "_linear", linear)
        distilled = None if self.distilled is None else _linear(self.distilled)
        object.__setattr__(self, "_distilled", distilled)
        object.__setattr__(self, "_columns", np.column_stack(columns).reshape(size, len(columns)))

    def _parts(self) -> list[Outcomes]:
        """The regressions over terms, in column order: each format's, then the imitation."""
        parts = [self.formats[name] for name in FORMATS]
        return parts if self.distilled is None else [*parts, self.distilled]

    def raw(self, ask: str, features: Features, vector: Vector | None = None) -> float:
        """The raw expected gain that ``score`` ranks (for fitting and evaluation)."""
        gain, _, _ = self._gain(ask, features.values(), vector, None)
        return gain

    def score(
        self,
        ask: str,
        features: Features,
        threshold: float,
        vector: Vector | None = None,
        scanned: Text | None = None,
    ) -> Difficulty:
        """The ranked score of a request asking ``ask`` (with its embedding ``vector`` when
        the model has an embedding part and the request has one). ``scanned``: the features'
        ``text_of(window(ask))`` when the caller has it already."""
        gain, parts, with_embedding = self._gain(ask, features.values(), vector, scanned)
        points = self.quantiles
        if with_embedding and self.embedding is not None:
            points = self.embedding.quantiles
        ranked = rank(gain, points)
        ordered = tuple(sorted(parts.items(), key=itemgetter(1), reverse=True))
        source = "model+embedding" if with_embedding else "model"
        return Difficulty(ranked, ranked >= threshold, ordered, source=source)

    def _gain(
        self, ask: str, x: tuple[float, ...], vector: Vector | None, scanned: Text | None
    ) -> tuple[float, dict[str, float], bool]:
        """The raw gain, each column group's share of it (linearised), and whether the
        embedding part gave it."""
        parts: dict[str, float] = dict.fromkeys(("words", *FEATURE_NAMES), 0.0)
        if vector is not None and self.embedding is not None:
            part = self.embedding
            q_large, q_small, along_large, along_small = part.outcomes(x, vector)
            slopes = (q_large * (1 - q_large), q_small * (1 - q_small))
            parts["embedding"] = slopes[0] * along_large - slopes[1] * along_small
            large, small = part.large.features.tolist(), part.small.features.tolist()
            for name, a, b, value in zip(FEATURE_NAMES, large, small, x, strict=True):
                parts[name] += (slopes[0] * a - slopes[1] * b) * value
            return q_large - q_small, parts, True
        seen = text_of(window(ask)) if scanned is None else scanned
        kind = prompt_format(seen.text)
        sums = self._term_sums(seen.words, seen.order)
        column = 2 * FORMATS.index(kind)
        terms = [(self._linear[kind], sums[column], sums[column + 1])]
        if self._distilled is not None:
            terms.append((self._distilled, sums[4], sums[5]))
        gain = words = 0.0
        shares = [0.0] * len(x)
        for (bias_large, bias_small, w_large, w_small), t_large, t_small in terms:
            p_large = _sigmoid(bias_large + t_large + sum(map(mul, w_large, x)))
            p_small = _sigmoid(bias_small + t_small + sum(map(mul, w_small, x)))
            s_large, s_small = p_large * (1 - p_large), p_small * (1 - p_small)
            gain += p_large - p_small
            words += s_large * t_large - s_small * t_small
            shares = [
                c + s_large * a - s_small * b
                for c, a, b in zip(shares, w_large, w_small, strict=True)
            ]
        parts.update(zip(FEATURE_NAMES, map(mul, shares, x), strict=True))
        parts["words"] = words
        return gain, parts, False

    def _term_sums(self, distinct: frozenset[bytes], order: list[bytes]) -> list[float]:
        """Each column's sum over the vocabulary terms among the words (``distinct``: each
        once; ``order``: as they come) and their adjacent pairs, each term once."""
        rows = set(map(self._words.get, distinct, repeat(-1)))
        # zip, unlike pairwise in 3.11, reuses its result tuple: no allocation per pair.
        rows.update(map(self._pairs.get, zip(order, order[1:]), repeat(-1)))  # noqa: B905, RUF007
        rows.discard(-1)
        # In row order: the same sums whatever the order of the set (the hash seed).
        found = np.fromiter(rows, np.intp, len(rows))
        found.sort()
        # take and add.reduce: the same rows summed the same way as indexing and sum, in
        # two thirds of the instructions (numpy's dispatch is most of the cost at 64 rows).
        sums: list[float] = np.add.reduce(self._columns.take(found, axis=0)).tolist()
        return sums

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "about": self.about,
            "quantiles": _rounded(np.asarray(self.quantiles)),
            "heuristic_quantiles": _rounded(np.asarray(self.heuristic_quantiles)),
            **{name: self.formats[name].to_json() for name in FORMATS},
        }
        if self.distilled is not None:
            out["distilled"] = self.distilled.to_json()
        if self.embedding is not None:
            out["embedding"] = self.embedding.to_json()
        out["vocabulary"] = list(self.vocabulary)
        return out

    @classmethod
    def from_json(cls, data: Any) -> TextModel:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a text difficulty model file (want format {FORMAT!r})")
        try:
            part, distilled = data.get("embedding"), data.get("distilled")
            return cls(
                vocabulary=tuple(str(t) for t in data["vocabulary"]),
                formats={name: Outcomes.from_json(data[name]) for name in FORMATS},
                quantiles=tuple(float(q) for q in data["quantiles"]),
                heuristic_quantiles=tuple(float(q) for q in data["heuristic_quantiles"]),
                distilled=None if distilled is None else Outcomes.from_json(distilled),
                embedding=None if part is None else EmbeddingPart.from_json(part),
                about=str(data.get("about", "")),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed difficulty model file: {exc!r}") from None


# Biases and feature weights of one part (large, small), laid out as floats for scoring.
_Linear = tuple[float, float, tuple[float, ...], tuple[float, ...]]


def _linear(outcomes: Outcomes) -> _Linear:
    large, small = outcomes.large, outcomes.small
    features = tuple(large.features.tolist()), tuple(small.features.tolist())
    return large.bias, small.bias, *features


def read_model_json(path: str | Path | None) -> Any:
    """The parsed JSON of a weights file (gzip-compressed or not), or of the bundled text
    model (``path`` None)."""
    try:
        if path is None:
            raw = resources.files("gateway.classify").joinpath(BUNDLED).read_bytes()
        else:
            raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read difficulty model {path or '(bundled)'}: {exc}") from None


def write_model(model: TextModel, path: Path) -> None:
    """``model`` as JSON in ``path``, gzip-compressed when the name ends in ``.gz``."""
    text = json.dumps(model.to_json(), separators=(",", ":")).encode("utf-8")
    # mtime 0: the same model gives the same bytes.
    path.write_bytes(gzip.compress(text, mtime=0) if path.suffix == ".gz" else text)


def load_text_model(path: str | Path | None = None) -> TextModel:
    """The text model in ``path``, or the bundled one; ``ValueError`` says what is wrong."""
    return TextModel.from_json(read_model_json(path))


def _check_quantiles(name: str, values: tuple[float, ...]) -> None:
    if len(values) != QUANTILE_POINTS or any(b < a for a, b in pairwise(values)):
        raise ValueError(f"{name} must be {QUANTILE_POINTS} non-decreasing values")


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _rounded(values: Weights) -> list[float]:
    return [float(f"{v:.6g}") for v in values.tolist()]
