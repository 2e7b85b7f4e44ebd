"""The per-backend TTFT predictor: prior, learning, no drift when idle, error sign."""

from __future__ import annotations

import random

import pytest

from gateway.backends.ttft import PRIOR, TtftFeatures, TtftModel


def _f(
    u: float = 0.0, p: float = 0.0, n: float = 0.0, d: float = 0.0, w: float = 0.0
) -> TtftFeatures:
    return TtftFeatures(u, p, n, d, w)


@pytest.mark.parametrize(
    ("features", "expected"),
    [
        (_f(), PRIOR[0]),
        (_f(u=2000), PRIOR[0] + 2 * PRIOR[1]),
        (_f(p=1000, n=4), PRIOR[0] + PRIOR[2] + 4 * PRIOR[3]),
        (_f(d=10, w=2), PRIOR[0] + 10 * PRIOR[4] + 2 * PRIOR[5]),
    ],
)
def test_before_any_observation_the_prior_predicts(features: TtftFeatures, expected: float) -> None:
    assert TtftModel().predict(features) == pytest.approx(expected)


def _truth(f: TtftFeatures) -> float:
    # A fast engine: 30 ms base, 0.1 s per 1k tokens, 0.6 s per request ahead in its queue.
    return 0.03 + 0.1 * (f.uncached_tokens + f.pending_tokens) / 1000 + 0.6 * f.pending


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_learns_a_linear_engine_within_a_few_dozen_requests(seed: int) -> None:
    rng = random.Random(seed)
    model = TtftModel()
    for _ in range(60):
        f = _f(u=rng.uniform(10, 3000), p=rng.uniform(0, 4000), n=rng.randint(0, 8))
        model.observe(f, _truth(f), model.predict(f))
    for probe in (_f(u=100), _f(u=2000, p=1000, n=3), _f(u=500, n=8)):
        assert model.predict(probe) == pytest.approx(_truth(probe), rel=0.1, abs=0.1)


def test_idle_time_changes_nothing() -> None:
    # Nothing in the model reads a clock: a backend idle for an hour predicts what it did.
    model = TtftModel()
    f = _f(u=500, n=2)
    model.observe(f, 0.4, model.predict(f))
    before = model.predict(f)
    assert model.predict(f) == before


def test_forgetting_follows_a_slower_engine() -> None:
    model = TtftModel()
    f = _f(u=1000, n=1)
    for _ in range(50):
        model.observe(f, 0.3, model.predict(f))
    for _ in range(250):  # old observations weigh 0.98 ** 250: nothing
        model.observe(f, 1.2, model.predict(f))
    assert model.predict(f) == pytest.approx(1.2, rel=0.05)


@pytest.mark.parametrize(("observed", "predicted", "error"), [(1.5, 1.0, 0.5), (0.2, 0.5, -0.3)])
def test_observe_returns_observed_minus_predicted(
    observed: float, predicted: float, error: float
) -> None:
    assert TtftModel().observe(_f(), observed, predicted) == pytest.approx(error)


def test_nonsense_observations_are_ignored() -> None:
    model = TtftModel()
    model.observe(_f(), float("nan"), 0.1)
    model.observe(_f(), -1.0, 0.1)
    assert model.observations == 0


def test_predictions_never_go_below_the_floor() -> None:
    model = TtftModel(prior=(-5.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    assert model.predict(_f()) == pytest.approx(0.001)


@pytest.mark.parametrize(("ratio", "expect_above"), [(2.0, 1.5), (0.5, None)])
def test_upper_tracks_the_90th_percentile_of_under_prediction(
    ratio: float, expect_above: float | None
) -> None:
    model = TtftModel()
    f = _f(u=500)
    for _ in range(200):
        predicted = model.predict(f)
        # Observations a fixed ratio off the prediction (the model keeps learning them too).
        model.observe(f, predicted * ratio, predicted)
    if expect_above is None:
        assert model.ratio_p90 == 1.0  # never below the plain prediction
    else:
        assert model.ratio_p90 > expect_above
    assert model.upper(f) == pytest.approx(model.predict(f) * model.ratio_p90)


# (features learned from, features asked about) -> supported
SUPPORT: dict[str, tuple[list[TtftFeatures], TtftFeatures, bool]] = {
    "nothing learned yet: the prior is no evidence": ([], TtftFeatures(100, 0, 0, 0), False),
    "inside what was seen": (
        [TtftFeatures(500, 1000, 2, 3)] * 3,
        TtftFeatures(400, 800, 2, 2),
        True,
    ),
    "a little past what was seen (x1.25, +1)": (
        [TtftFeatures(500, 1000, 4, 3)] * 3,
        TtftFeatures(500, 1000, 6, 4),
        True,
    ),
    "just past the reach (6 is x1.25 + 1 of 4)": (
        [TtftFeatures(500, 1000, 4, 3)] * 3,
        TtftFeatures(500, 1000, 6.01, 4),
        False,
    ),
    "a feature that is not a number: never supported": (
        [TtftFeatures(500, 1000, 4, 3)] * 3,
        TtftFeatures(500, float("nan"), 4, 3),
        False,
    ),
    "in flight far past anything seen: an extrapolation": (
        [TtftFeatures(500, 1000, 4, 3)] * 3,
        TtftFeatures(500, 1000, 60, 3),
        False,
    ),
    "queued inside the engine, never seen: an extrapolation": (
        [TtftFeatures(500, 1000, 4, 3)] * 3,
        TtftFeatures(500, 1000, 4, 3, engine_waiting=10),
        False,
    ),
}


# first tokens learned from (seconds) -> a prediction (seconds) -> within what was seen
REACH: dict[str, tuple[list[float], float, bool]] = {
    "nothing seen: only the absolute slack": ([], 1.0, True),
    "inside the longest seen": ([0.4, 0.9, 0.6], 0.8, True),
    "x1.25 + 1 s of the longest": ([0.4, 0.9, 0.6], 2.125, True),
    "past it (the ramp's 6.1 s against 0.9 s seen)": ([0.4, 0.9, 0.6], 6.1, False),
    "late first tokens seen: a late prediction is evidence": ([0.9, 5.0], 6.1, True),
}  # fmt: skip


@pytest.mark.parametrize(("observed", "upper_s", "reaches"), REACH.values(), ids=REACH.keys())
def test_a_prediction_past_the_longest_first_token_seen_is_an_extrapolation(
    observed: list[float], upper_s: float, reaches: bool
) -> None:
    model = TtftModel()
    features = TtftFeatures(500, 1000, 4, 3)
    for seconds in observed:
        model.observe(features, seconds, model.predict(features))
    assert model.reaches(upper_s) is reaches


@pytest.mark.parametrize(("learned", "asked", "supported"), SUPPORT.values(), ids=SUPPORT.keys())
def test_a_prediction_is_supported_only_inside_what_was_observed(
    learned: list[TtftFeatures], asked: TtftFeatures, supported: bool
) -> None:
    model = TtftModel()
    for features in learned:
        model.observe(features, 0.5, model.predict(features))
    assert model.supported(asked) is supported
