"""Predicted time to first token of one backend, learned online from what the gateway sees.

Model: a linear predictor over what stands between a new request and its first token,

    ttft = θ · x,   x = (1, u, p, n, d, w)

    u  this request's prompt tokens expected to miss the prefix cache, in thousands
    p  prefill work ahead: prompt tokens of requests already sent to the backend that have
       not had their first token, in thousands
    n  how many such requests there are (an engine with every slot busy makes each one wait
       for a running sequence to finish)
    d  sequences decoding (sent, first token seen): they share every engine step
    w  requests queued inside the engine: the gateway's own in flight beyond the most
       sequences the engine was ever seen running (exact and fresh), or the engine's scraped
       waiting queue when larger (other clients); 0 for engines without metrics

Fit: exponentially weighted ridge regression towards a prior. The data part of the normal
equations forgets by ``forget`` per observation (not per second: an idle backend keeps what
it learned, it does not drift into "stalled"); the prior part never fades, so a feature that
has not varied yet keeps its prior coefficient instead of an arbitrary one:

    A = Σ λ^(k-i) x_i x_iᵀ + Λ,     b = Σ λ^(k-i) x_i y_i + Λ θ₀,     θ = A⁻¹ b

The prior θ₀ is conservative (a slow engine: 0.5 s per thousand prompt tokens, a quarter of
a second per request ahead) and weighs about ``prior_weight`` observations, so the first
predictions are usable before anything completed and the data take over within a few
dozen requests. Predictions are never below ``floor_s``.

Error: ``observe`` returns ``observed - predicted`` for the prediction it is given, which is
what the gateway exports as its prediction error.

Support: a prediction is only as good as the observations near it. The model keeps, per
feature, the largest value it has learned from (``seen``); a request whose features lie
beyond ``SUPPORT_SLACK`` times that (plus ``SUPPORT_ABS``, one unit of each) is an
extrapolation, which ``supported`` says, and which admission never refuses on: it admits
and learns instead. Before ``MIN_SUPPORT`` observations nothing is supported: a prior is a
guess, not evidence. The outcome too (``reaches``): a prediction past ``SUPPORT_SLACK`` times
the longest first token learned from (``longest_s``, plus ``SUPPORT_ABS_S``) is a slope
carried beyond what was seen (at 200 users on one engine, 71 waiting in it, one prediction
read 6.1 s while every first token came within 0.9 s), and refuses nothing either; the
first tokens that late, once they come, make it evidence.

Calibration: decisions use ``upper``, the prediction times the 90th percentile of
observed / predicted, tracked online with the stochastic quantile update

    q <- q + eta * (0.9 - [observed / predicted < q]),    q >= 1,

so a model that under-predicts one engine's tail is corrected for that engine by how much
it under-predicted, without a hand-set margin.

Cost: ``observe`` runs once per request and ``predict`` several times per request and
replica, so ``observe`` keeps to plain Python: it counts the observation, updates ``seen``,
``longest_s`` and ``ratio_p90`` (exact per observation; ``ratio_p90`` reads the prediction it
is given, not θ) and sets the observation aside. The numpy part is folded in one batch when a
prediction needs θ: for the k observations set aside, oldest first,

    A <- λ^k A + Σ_j λ^(k-j) x_j x_jᵀ,     b <- λ^k b + Σ_j λ^(k-j) x_j y_j,     θ = A⁻¹ b

(Λ and Λθ₀ added at the solve), the same θ as k updates one at a time up to float rounding,
for about the cost of one of them. With a clock (``clock``, a backend's injected one), a fold
runs at most once every ``FOLD_S`` (and whenever ``FOLD_MAX`` observations wait), so under
load one fold covers every first token of that span; without one, every prediction folds
what waits. The staleness this allows: a prediction made within ``FOLD_S`` of the last fold
uses that fold's θ, without the first tokens observed since; any first token observed more
than ``FOLD_S`` before a prediction is in it. Admission can afford that: each observation
already describes the engine as it was at its dispatch, a first token ago (tens of
milliseconds to seconds), the engine's own metrics are a scrape interval old, and θ rests
on the last ~1 / (1 - ``forget``) observations (50), of which a fold adds those of one
``FOLD_S`` at once (10 at 400 requests/s); a backend at low load (a request per ``FOLD_S``
or less) has every earlier observation in every prediction, as before. ``FOLD_S`` is 25 ms:
at 400 requests/s a fold then covers 10 first tokens, which takes the model's cost per
request to about 0.6 of one update at a time, and a longer span saves little more (0.55 at
20 per fold; ``python -m loadtests.ttft_fold``); at one request per ``FOLD_S`` or fewer
each fold covers one, at about the old cost.

``solve`` is what ``np.linalg.solve`` runs for a float64 6x6 system (its gufunc, under the
same error state: a singular system raises ``LinAlgError``, from the fold that meets it, θ
unchanged), without the generic checks and conversions around it that cost three times the
solve itself (the same result, bit for bit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.linalg import LinAlgError

# (intercept s, s per 1k uncached tokens, s per 1k pending tokens, s per pending request,
#  s per decoding sequence, s per engine-waiting request)
PRIOR = (0.2, 0.5, 0.5, 0.25, 0.01, 0.25)
# Prior standard deviations of each coefficient: how far the data may move it cheaply.
PRIOR_SCALE = (0.5, 1.0, 1.0, 0.5, 0.05, 0.5)
# How far past the largest observed value of a feature a prediction is still supported:
# times this, plus one unit of the feature (a thousand tokens, one request).
SUPPORT_SLACK = 1.25
SUPPORT_ABS = (0.0, 1.0, 1.0, 1.0, 1.0, 1.0)
SUPPORT_ABS_S = 1.0  # ... and past the longest first token seen, seconds
MIN_SUPPORT = 3  # observations before any prediction is supported
_QUANTILE = 0.9  # of observed / predicted, for ``upper``
_ETA = 0.05  # its step per observation
# With a clock, θ is folded at most this often (seconds; see the module's docstring) ...
FOLD_S = 0.025
FOLD_MAX = 64  # ... and whenever this many observations wait


@dataclass(frozen=True, slots=True)
class TtftFeatures:
    uncached_tokens: float
    pending_tokens: float
    pending: float
    decoding: float
    engine_waiting: float = 0.0

    def fields(self) -> dict[str, float]:
        """By name (``dataclasses.asdict`` without its recursion and copies)."""
        return {
            "uncached_tokens": self.uncached_tokens,
            "pending_tokens": self.pending_tokens,
            "pending": self.pending,
            "decoding": self.decoding,
            "engine_waiting": self.engine_waiting,
        }

    def values(self) -> tuple[float, float, float, float, float, float]:
        """x = (1, u, p, n, d, w) of the model (see the module doc)."""
        return (
            1.0,
            self.uncached_tokens / 1000.0,
            self.pending_tokens / 1000.0,
            self.pending,
            self.decoding,
            self.engine_waiting,
        )


class TtftModel:
    """Online TTFT predictor of one backend. Not thread-safe."""

    __slots__ = (
        "_ab",
        "_clock",
        "_coefficients",
        "_due",
        "_floor",
        "_forget",
        "_powers",
        "_prior_ab",
        "_reach",
        "_rows",
        "_seen",
        "_theta",
        "longest_s",
        "observations",
        "ratio_p90",
    )

    def __init__(
        self,
        *,
        forget: float = 0.98,
        prior_weight: float = 0.5,
        prior: tuple[float, ...] = PRIOR,
        prior_scale: tuple[float, ...] = PRIOR_SCALE,
        floor_s: float = 0.001,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not 0.0 < forget <= 1.0:
            raise ValueError(f"forget must be in (0, 1], got {forget}")
        if prior_weight <= 0.0 or len(prior) != len(prior_scale) != 6:
            raise ValueError("prior_weight must be > 0 and the prior have 6 coefficients")
        theta0 = np.array(prior, dtype=float)
        precision = prior_weight / np.square(np.array(prior_scale, dtype=float))
        prior_a = np.diag(precision)
        # The normal equations side by side, [A | b] (6 x 7): the data's and the prior's.
        self._prior_ab = np.column_stack((prior_a, prior_a @ theta0))
        self._ab = np.zeros((6, 7))
        self._forget = forget
        # λ^FOLD_MAX, ..., λ, 1: a fold of k weighs its observations by the last k and the
        # data before them by the one ahead of those.
        self._powers = forget ** np.arange(FOLD_MAX, -1, -1, dtype=float)
        self._floor = floor_s
        self._clock = clock
        self._due = -math.inf  # no fold before this (the clock's), while observations wait
        self._rows: list[tuple[float, ...]] = []  # observed, not folded yet: (*x, y)
        self.theta = theta0
        self.observations = 0
        self.ratio_p90 = 1.0  # observed / predicted, 90th percentile (at least 1)
        self._seen: tuple[float, ...] = (0.0,) * 6
        self._reach = _reach(self._seen)
        self.longest_s = 0.0  # the longest first token learned from

    @property
    def theta(self) -> np.ndarray:
        """The coefficients predictions use: as of the last fold (``fold``)."""
        return self._theta

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        self._theta = value
        # Predictions run per request and replica: a dot product of six floats in Python
        # costs less than building an array for numpy.
        coefficients: list[float] = value.tolist()
        self._coefficients = tuple(coefficients)

    @property
    def seen(self) -> np.ndarray:
        """The largest value of each feature learned from (exact: every observation's)."""
        return np.array(self._seen)

    @property
    def waiting(self) -> int:
        """Observations not folded into θ yet."""
        return len(self._rows)

    def predict(self, features: TtftFeatures) -> float:
        if self._rows:
            self._fold_if_due()
        total = sum(c * x for c, x in zip(self._coefficients, features.values(), strict=True))
        return max(self._floor, total)

    def supported(self, features: TtftFeatures) -> bool:
        """Whether the observations cover these features (no extrapolation past them)."""
        if self.observations < MIN_SUPPORT:
            return False
        for value, reach in zip(features.values(), self._reach, strict=True):
            if not value <= reach:  # (a NaN is beyond any reach, as numpy compares it)
                return False
        return True

    def reaches(self, upper_s: float) -> bool:
        """Whether first tokens this late were seen (within ``SUPPORT_SLACK`` times the
        longest, plus ``SUPPORT_ABS_S``): a prediction past them extrapolates the outcome."""
        return upper_s <= self.longest_s * SUPPORT_SLACK + SUPPORT_ABS_S

    def upper(self, features: TtftFeatures) -> float:
        """The prediction, calibrated to be exceeded about one time in ten."""
        return self.calibrated(self.predict(features))

    def calibrated(self, predicted_s: float) -> float:
        """``upper`` of a prediction already made."""
        return predicted_s * self.ratio_p90

    def observe(self, features: TtftFeatures, observed_s: float, predicted_s: float) -> float:
        """Learn from one first token; the prediction's error (observed - predicted). θ
        learns it at the next fold (see the module's docstring), the rest at once."""
        if not math.isfinite(observed_s) or observed_s < 0.0:
            return 0.0
        x = features.values()
        self._rows.append((*x, observed_s))
        self.observations += 1
        self.longest_s = max(self.longest_s, observed_s)
        # np.maximum's: the larger, or NaN where either is NaN.
        seen = tuple(v if v > s or v != v else s for s, v in zip(self._seen, x, strict=True))
        if seen != self._seen:  # (mostly not, once the engine was seen busy)
            self._seen, self._reach = seen, _reach(seen)
        ratio = observed_s / max(predicted_s, self._floor)
        step = _QUANTILE - (1.0 if ratio < self.ratio_p90 else 0.0)
        self.ratio_p90 = max(1.0, self.ratio_p90 + _ETA * step)
        if len(self._rows) >= FOLD_MAX:
            self.fold()
        return observed_s - predicted_s

    def _fold_if_due(self) -> None:
        clock = self._clock
        if clock is not None:
            now = clock()
            if now < self._due:
                return
            self._due = now + FOLD_S
        self.fold()

    def fold(self) -> None:
        """Fold the observations set aside into A, b and θ, now (see the module's docstring);
        a singular system raises ``LinAlgError`` with θ unchanged."""
        rows = self._rows
        k = len(rows)
        if not k:
            return
        self._rows = []
        z = np.array(rows)  # k x 7: (x_j, y_j), oldest first
        weighted = z[:, :6].T * self._powers[-k:]  # column j: λ^(k-j) x_j
        self._ab = self._powers[-k - 1] * self._ab + weighted @ z
        ab = self._ab + self._prior_ab
        self.theta = solve(ab[:, :6], ab[:, 6])


def _reach(seen: tuple[float, ...]) -> tuple[float, ...]:
    # ``supported`` runs per request and replica: six comparisons of Python floats cost
    # less than numpy's on arrays of six (the same float64 arithmetic).
    return tuple(s * SUPPORT_SLACK + a for s, a in zip(seen, SUPPORT_ABS, strict=True))


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.linalg.solve(a, b)`` for a float64 square ``a`` and vector ``b`` (see the module's
    docstring); ``np.linalg.solve`` itself where numpy keeps its gufunc elsewhere."""
    gufunc = getattr(getattr(np.linalg, "_umath_linalg", None), "solve1", None)
    if gufunc is None or a.dtype != np.float64 or b.dtype != np.float64:
        return np.linalg.solve(a, b)
    with np.errstate(
        call=_singular, invalid="call", over="ignore", divide="ignore", under="ignore"
    ):
        result: np.ndarray = gufunc(a, b, signature="dd->d")
    return result


def _singular(err: str, flag: int) -> None:
    raise LinAlgError("Singular matrix")
