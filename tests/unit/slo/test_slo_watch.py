"""What was watched during a ramp: pool states from /metrics, first moments (pure)."""

from __future__ import annotations

from loadtests.slo.watch import (
    EngineSample,
    StateSample,
    first_state,
    first_waiting,
    peak_waiting,
    pool_states,
)

METRICS = """# HELP gateway_pool_state x
# TYPE gateway_pool_state gauge
gateway_pool_state{pool="a",state="nominal"} 0.0
gateway_pool_state{pool="a",state="saturated"} 1.0
gateway_pool_state{pool="a",state="overloaded"} 0.0
gateway_pool_state{pool="b",state="nominal"} 1.0
gateway_pool_state{pool="b",state="saturated"} 0.0
gateway_pool_state_other{pool="c",state="nominal"} 1.0
"""


def test_pool_states_read_the_state_set_to_one() -> None:
    assert pool_states(METRICS) == {"a": "saturated", "b": "nominal"}
    assert pool_states("") == {}


ENGINE = [EngineSample(0.1, 0, 3), EngineSample(0.5, 2, 8), EngineSample(0.9, 0, 8),
          EngineSample(1.3, 5, 8)]  # fmt: skip


def test_first_waiting_and_the_peak_in_a_window() -> None:
    assert first_waiting(ENGINE) == 0.5
    assert first_waiting(ENGINE, after_s=0.6) == 1.3
    assert first_waiting(ENGINE, after_s=2.0) is None
    assert peak_waiting(ENGINE, 0.0, 1.0) == 2
    assert peak_waiting(ENGINE, 0.0, 2.0) == 5
    assert peak_waiting(ENGINE, 5.0, 6.0) is None


def test_first_state_other_than_nominal() -> None:
    states = [StateSample(0.2, {"p": "nominal"}), StateSample(0.4, {"p": "overloaded"}),
              StateSample(0.6, {"p": "nominal", "q": "saturated"})]  # fmt: skip
    assert first_state(states) == 0.4
    assert first_state(states, after_s=0.5) == 0.6
    assert first_state(states[:1]) is None
