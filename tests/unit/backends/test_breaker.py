"""CircuitBreaker: event sequences with clock advances -> states, plus settings validation."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.backends.breaker import BreakerSettings, BreakerState, CircuitBreaker


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(**settings: Any) -> tuple[CircuitBreaker, FakeClock]:
    clock = FakeClock()
    return CircuitBreaker(BreakerSettings(**settings), clock), clock


# Steps are "event>expected". Events: S success, F failure, N neutral, B on_start (dispatch),
# +x advance the clock x seconds. Expected: C closed, O open, H+ half-open and allows(),
# H- half-open and not allows(). C implies allows() and O implies not allows().
EXPECTED = {
    "C": (BreakerState.CLOSED, True),
    "O": (BreakerState.OPEN, False),
    "H+": (BreakerState.HALF_OPEN, True),
    "H-": (BreakerState.HALF_OPEN, False),
}

# Only the consecutive rule can trip (the window never reaches min_requests).
STREAK = {"consecutive_failures": 3, "window": 50, "min_requests": 50, "cooldown_s": 10.0}
# Only the rate rule can trip.
RATE = {"consecutive_failures": 100, "failure_rate": 0.5, "window": 10, "min_requests": 4}

# id -> (settings, steps)
SEQUENCES: dict[str, tuple[dict[str, Any], str]] = {
    "fresh breaker is closed": (STREAK, "S>C"),
    "trips after N consecutive failures": (STREAK, "F>C F>C F>O"),
    "a success resets the streak": (STREAK, "F>C F>C S>C F>C F>C F>O"),
    "neutral does not reset the streak": (STREAK, "F>C N>C F>C N>C F>O"),
    "consecutive_failures=1 trips at once": (
        {**STREAK, "consecutive_failures": 1},
        "S>C F>O",
    ),
    "rate rule waits for min_requests": (RATE, "F>C F>C F>C F>O"),
    "rate under threshold stays closed": (RATE, "S>C F>C S>C S>C F>C S>C S>C F>C"),
    "rate reaching threshold trips": (RATE, "S>C F>C S>C F>O"),
    "rate counts only the last window verdicts": (
        {**RATE, "window": 4, "min_requests": 4, "failure_rate": 0.75},
        # windows: [F F S S] 2/4, [F S S F] 2/4, [S S F F] 2/4, [S F F F] 3/4
        "F>C F>C S>C S>C F>C F>C F>O",
    ),
    "successes only never trip on rate": (RATE, " ".join(["S>C"] * 30)),
    "rate 1.0 needs a full window of failures": (
        {**RATE, "window": 3, "min_requests": 3, "failure_rate": 1.0},
        "F>C F>C S>C F>C F>C F>O",
    ),
    "rate 0.3 trips at exactly 3 of 10": (
        {**RATE, "failure_rate": 0.3, "min_requests": 10},
        "F>C F>C S>C S>C S>C S>C S>C S>C S>C F>O",
    ),
    "neutral is not recorded in the window": (
        {**RATE, "window": 2, "min_requests": 2, "failure_rate": 1.0},
        "F>C N>C N>C F>O",
    ),
    "open until the cooldown has passed": (STREAK, "F>C F>C F>O +9.99>O +0.01>H+"),
    "a long wait still ends in half-open": (STREAK, "F>C F>C F>O +1000>H+ +1000>H+"),
    "half-open success closes": (STREAK, "F>C F>C F>O +10>H+ B>H- S>C"),
    "half-open failure re-opens": (STREAK, "F>C F>C F>O +10>H+ B>H- F>O"),
    "re-ejection doubles the cooldown": (
        STREAK,
        "F>C F>C F>O +10>H+ B>H- F>O +19.9>O +0.1>H+",
    ),
    "cooldown doubles again and is capped": (
        {**STREAK, "max_cooldown_s": 30.0},
        # 10 -> 20 -> 30 (not 40) -> 30
        "F>C F>C F>O +10>H+ B>H- F>O +20>H+ B>H- F>O +29.9>O +0.1>H+ B>H- F>O +29.9>O +0.1>H+",
    ),
    "closing resets the cooldown to base": (
        STREAK,
        "F>C F>C F>O +10>H+ B>H- F>O +20>H+ B>H- S>C F>C F>C F>O +9.9>O +0.1>H+",
    ),
    "closing clears the record": (
        STREAK,
        "F>C F>C F>O +10>H+ B>H- S>C F>C F>C S>C F>C F>C F>O",
    ),
    "closing clears the rate window": (
        {**RATE, "window": 4, "min_requests": 4, "cooldown_s": 10.0},
        # the probe's success is not recorded; with the old failures kept, [F F S F] would trip
        "F>C F>C F>C F>O +10>H+ B>H- S>C S>C F>C S>C F>O",
    ),
    "one probe by default": (STREAK, "F>C F>C F>O +10>H+ B>H- B>H-"),
    "probe limit of two": (
        {**STREAK, "half_open_probes": 2},
        "F>C F>C F>O +10>H+ B>H+ B>H- S>C",
    ),
    "neutral releases a probe slot": (STREAK, "F>C F>C F>O +10>H+ B>H- N>H+ B>H- S>C"),
    "neutral releases one slot of two": (
        {**STREAK, "half_open_probes": 2},
        "F>C F>C F>O +10>H+ B>H+ B>H- N>H+ N>H+ N>H+ B>H+ F>O",
    ),
    "first verdict of several probes decides": (
        {**STREAK, "half_open_probes": 3},
        "F>C F>C F>O +10>H+ B>H+ B>H+ N>H+ F>O S>O",
    ),
    "outcomes while open are ignored": (STREAK, "F>C F>C F>O S>O B>O F>O N>O +10>H+"),
    "stale outcomes in half-open without a probe are ignored": (
        STREAK,
        "F>C F>C F>O +10>H+ S>H+ F>H+ N>H+ B>H- S>C",
    ),
    "late probe result after re-opening is ignored": (
        {**STREAK, "half_open_probes": 2},
        "F>C F>C F>O +10>H+ B>H+ B>H- F>O S>O +20>H+",
    ),
    "neutral in closed records nothing": (STREAK, "N>C N>C N>C B>C S>C"),
}


def _run(breaker: CircuitBreaker, clock: FakeClock, steps: str) -> list[str]:
    """Apply the steps; return the observed state token after each."""
    observed = []
    for token in steps.split():
        event, _, _ = token.partition(">")
        if event.startswith("+"):
            clock.now += float(event[1:])
        else:
            {
                "S": breaker.on_success,
                "F": breaker.on_failure,
                "N": breaker.on_neutral,
                "B": breaker.on_start,
            }[event]()
        allows = breaker.allows()
        state = breaker.state
        observed.append(
            next(key for key, value in EXPECTED.items() if value == (state, allows))
            if (state, allows) in EXPECTED.values()
            else f"{state}/{allows}"
        )
    return observed


@pytest.mark.parametrize(("settings", "steps"), SEQUENCES.values(), ids=SEQUENCES.keys())
def test_sequence(settings: dict[str, Any], steps: str) -> None:
    breaker, clock = make(**settings)
    expected = [token.partition(">")[2] for token in steps.split()]
    assert _run(breaker, clock, steps) == expected


# id -> (settings, steps, ejections)
EJECTION_COUNTS: dict[str, tuple[dict[str, Any], str, int]] = {
    "none": (STREAK, "F>C F>C S>C", 0),
    "one trip": (STREAK, "F>C F>C F>O", 1),
    "outcomes while open do not count": (STREAK, "F>C F>C F>O F>O F>O", 1),
    "half-open failures count": (STREAK, "F>C F>C F>O +10>H+ B>H- F>O +20>H+ B>H- F>O", 3),
    "trip after closing counts": (STREAK, "F>C F>C F>O +10>H+ B>H- S>C F>C F>C F>O", 2),
}


@pytest.mark.parametrize(
    ("settings", "steps", "ejections"), EJECTION_COUNTS.values(), ids=EJECTION_COUNTS.keys()
)
def test_ejections(settings: dict[str, Any], steps: str, ejections: int) -> None:
    breaker, clock = make(**settings)
    _run(breaker, clock, steps)
    assert breaker.ejections == ejections


def test_ejected_until_follows_the_clock() -> None:
    breaker, clock = make(**STREAK, max_cooldown_s=25.0)
    assert breaker.ejected_until is None
    for _ in range(3):
        breaker.on_failure()
    assert breaker.ejected_until == 1010.0
    clock.now = 1010.0
    assert breaker.ejected_until is None  # half-open now
    breaker.on_start()
    breaker.on_failure()
    assert breaker.ejected_until == 1030.0
    clock.now = 1030.0
    breaker.on_start()
    breaker.on_failure()
    assert breaker.ejected_until == 1055.0  # capped at 25
    clock.now = 1055.0
    breaker.on_start()
    breaker.on_success()
    assert breaker.ejected_until is None
    assert breaker.state is BreakerState.CLOSED


def test_half_open_is_evaluated_lazily_by_any_call() -> None:
    """on_start after the cooldown counts as a probe even if nobody read the state first."""
    breaker, clock = make(**STREAK)
    for _ in range(3):
        breaker.on_failure()
    clock.now += 10.0
    breaker.on_start()
    assert not breaker.allows()
    breaker.on_success()
    assert breaker.state is BreakerState.CLOSED


def test_defaults_are_valid_and_documented() -> None:
    settings = BreakerSettings()
    assert settings == BreakerSettings(
        consecutive_failures=5,
        failure_rate=0.5,
        window=20,
        min_requests=10,
        cooldown_s=10.0,
        max_cooldown_s=120.0,
        half_open_probes=1,
    )
    breaker = CircuitBreaker(settings, FakeClock())
    assert breaker.state is BreakerState.CLOSED
    assert breaker.allows()
    assert breaker.ejections == 0


# id -> (settings, the field the error names)
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "zero consecutive failures": ({"consecutive_failures": 0}, "consecutive_failures"),
    "negative consecutive failures": ({"consecutive_failures": -1}, "consecutive_failures"),
    "zero failure rate": ({"failure_rate": 0.0}, "failure_rate"),
    "negative failure rate": ({"failure_rate": -0.1}, "failure_rate"),
    "failure rate above one": ({"failure_rate": 1.01}, "failure_rate"),
    "nan failure rate": ({"failure_rate": float("nan")}, "failure_rate"),
    "zero window": ({"window": 0, "min_requests": 0}, "window"),
    "window below min_requests": ({"window": 5, "min_requests": 6}, "min_requests"),
    "zero min_requests": ({"min_requests": 0}, "min_requests"),
    "zero cooldown": ({"cooldown_s": 0.0}, "cooldown_s"),
    "negative cooldown": ({"cooldown_s": -1.0}, "cooldown_s"),
    "infinite cooldown": (
        {"cooldown_s": float("inf"), "max_cooldown_s": float("inf")},
        "cooldown_s",
    ),
    "nan cooldown": ({"cooldown_s": float("nan")}, "cooldown_s"),
    "max cooldown below cooldown": ({"cooldown_s": 10.0, "max_cooldown_s": 5.0}, "max_cooldown_s"),
    "nan max cooldown": ({"max_cooldown_s": float("nan")}, "max_cooldown_s"),
    "zero probes": ({"half_open_probes": 0}, "half_open_probes"),
}


@pytest.mark.parametrize(("kwargs", "field"), INVALID.values(), ids=INVALID.keys())
def test_invalid_settings(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must"):
        BreakerSettings(**kwargs)


VALID: dict[str, dict[str, Any]] = {
    "rate of one": {"failure_rate": 1.0},
    "min_requests equal to window": {"window": 7, "min_requests": 7},
    "window of one": {"window": 1, "min_requests": 1},
    "fixed cooldown": {"cooldown_s": 5.0, "max_cooldown_s": 5.0},
    "tiny cooldown": {"cooldown_s": 0.001},
    "many probes": {"half_open_probes": 50},
}


@pytest.mark.parametrize("kwargs", VALID.values(), ids=VALID.keys())
def test_valid_edge_settings(kwargs: dict[str, Any]) -> None:
    BreakerSettings(**kwargs)
