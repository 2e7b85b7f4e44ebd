"""The TTFT model's folded update: a batch of observations folded at once gives the θ of
updating one at a time (the module doc's formula), and with a clock a prediction within
``FOLD_S`` of the last fold uses that fold's θ while the rest of the model learns at once."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from gateway.backends.ttft import FOLD_MAX, FOLD_S, PRIOR, PRIOR_SCALE, TtftFeatures, TtftModel


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class Sequential:
    """The update one observation at a time, as the module doc writes it."""

    def __init__(self, forget: float, prior_weight: float = 0.5) -> None:
        self.prior_a = np.diag(prior_weight / np.square(np.array(PRIOR_SCALE)))
        self.prior_b = self.prior_a @ np.array(PRIOR)
        self.a, self.b, self.forget = np.zeros((6, 6)), np.zeros(6), forget

    def observe(self, features: TtftFeatures, observed_s: float) -> None:
        if not math.isfinite(observed_s) or observed_s < 0.0:
            return  # ignored, as the model ignores it
        x = np.array(features.values())
        self.a = self.forget * self.a + np.outer(x, x)
        self.b = self.forget * self.b + x * observed_s

    def theta(self) -> np.ndarray:
        return np.linalg.solve(self.a + self.prior_a, self.b + self.prior_b)


def _observations(seed: int, count: int) -> list[tuple[TtftFeatures, float]]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        features = TtftFeatures(
            rng.uniform(0, 8000), rng.uniform(0, 20000), rng.randint(0, 30), rng.randint(0, 60),
            rng.choice((0.0, 0.0, rng.uniform(0, 40))),
        )  # fmt: skip
        observed = rng.choice((rng.uniform(0.01, 6.0),) * 8 + (math.nan, -1.0))
        found.append((features, observed))
    return found


# id -> (forget, batch sizes folded in turn)
BATCHES: dict[str, tuple[float, list[int]]] = {
    "one at a time": (0.98, [1] * 30),
    "pairs": (0.98, [2] * 15),
    "uneven batches": (0.98, [7, 1, 20, 3, 1, 12]),
    "a full batch (folded by observe itself)": (0.98, [FOLD_MAX, 5]),
    "no forgetting, one at a time": (1.0, [1] * 30),
    "no forgetting, uneven batches": (1.0, [5, 17, 1, 40]),
    "fast forgetting": (0.5, [3, 9, 1, 30]),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("forget", "sizes"), BATCHES.values(), ids=BATCHES.keys())
def test_a_folded_batch_learns_what_one_at_a_time_learns(
    forget: float, sizes: list[int], seed: int
) -> None:
    model, reference = TtftModel(forget=forget), Sequential(forget)
    observations = iter(_observations(seed, sum(sizes)))
    for size in sizes:
        for _ in range(size):
            features, observed = next(observations)
            model.observe(features, observed, 0.5)
            reference.observe(features, observed)
        model.fold()
        assert model.waiting == 0
        expected = reference.theta()
        # Relative to θ's scale: a coefficient near 0 carries the rounding of the large ones.
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(model.theta, expected, rtol=1e-12, atol=1e-12 * scale)


def test_observe_folds_when_fold_max_wait() -> None:
    model = TtftModel(clock=Clock())
    for features, _ in _observations(3, FOLD_MAX - 1):
        model.observe(features, 0.5, 0.5)
    assert model.waiting == FOLD_MAX - 1
    model.observe(TtftFeatures(100, 0, 0, 0), 0.5, 0.5)
    assert model.waiting == 0


def test_at_low_load_every_prediction_sees_every_earlier_observation() -> None:
    # A request per FOLD_S: the clocked model predicts what the sequential update does.
    clock = Clock()
    model, reference = TtftModel(clock=clock), Sequential(0.98)
    for features, observed in _observations(4, 40):
        expected = max(0.001, float(reference.theta() @ np.array(features.values())))
        assert model.predict(features) == pytest.approx(expected, rel=1e-12)
        model.observe(features, observed, expected)
        reference.observe(features, observed)
        clock.now += FOLD_S
    assert model.waiting == 0


def test_within_fold_s_a_prediction_uses_the_previous_theta() -> None:
    clock = Clock()
    model = TtftModel(clock=clock)
    f, g, start = TtftFeatures(1000, 0, 1, 0), TtftFeatures(2000, 3000, 4, 2), clock.now
    model.observe(f, 2.0, model.predict(f))
    first = model.predict(f)  # the first fold runs at once
    assert model.waiting == 0
    assert first > PRIOR[0] + PRIOR[1] + PRIOR[3]  # it learned 2 s
    clock.now += FOLD_S / 2
    model.observe(g, 4.0, model.predict(g))
    assert model.predict(f) == first  # within FOLD_S of the fold: the previous θ
    assert model.waiting == 1
    # What does not read θ learned at once: the support, the longest first token.
    assert model.observations == 2
    assert model.longest_s == 4.0
    assert model.seen.tolist() == [1.0, 2.0, 3.0, 4.0, 2.0, 0.0]
    clock.now = start + FOLD_S  # FOLD_S after the fold: the next prediction sees it
    assert model.predict(f) != first
    assert model.waiting == 0
    together = TtftModel()
    together.observe(f, 2.0, 0.5)
    together.observe(g, 4.0, 0.5)
    assert model.predict(f) == pytest.approx(together.predict(f), rel=1e-12)


def test_support_counts_each_observation_before_any_fold() -> None:
    clock = Clock()
    model = TtftModel(clock=clock)
    model.predict(TtftFeatures(0, 0, 0, 0))  # nothing waits: no fold, no clock read needed
    for _ in range(3):
        model.observe(TtftFeatures(500, 1000, 4, 3), 0.5, 0.5)
    model.fold()
    model.observe(TtftFeatures(500, 1000, 40, 3), 0.5, 0.5)
    assert model.waiting == 1
    assert model.supported(TtftFeatures(500, 1000, 40, 3))  # seen, though not folded


def test_a_feature_that_is_not_a_number_is_seen_as_numpy_saw_it() -> None:
    model = TtftModel()
    model.observe(TtftFeatures(500, math.nan, 4, 3), 0.5, 0.5)
    model.observe(TtftFeatures(900, 1000, 2, 3), 0.5, 0.5)
    expected = np.maximum(
        np.maximum(np.zeros(6), TtftFeatures(500, math.nan, 4, 3).values()),
        TtftFeatures(900, 1000, 2, 3).values(),
    )
    np.testing.assert_array_equal(model.seen, expected)  # NaN stays NaN
    assert not model.supported(TtftFeatures(100, 100, 1, 1))


def test_a_singular_system_raises_from_the_fold_and_keeps_theta() -> None:
    # No prior weight on any coefficient (infinite prior spread): one observation leaves
    # A singular, which the one-at-a-time update raised on as this fold does.
    model = TtftModel(prior_scale=(math.inf,) * 6, clock=Clock())
    before = model.theta.tolist()
    model.observe(TtftFeatures(1000, 0, 1, 0), 0.5, 0.5)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        model.predict(TtftFeatures(1000, 0, 1, 0))
    assert model.theta.tolist() == before
    assert model.waiting == 0  # folded into A and b, as the update did before its solve
