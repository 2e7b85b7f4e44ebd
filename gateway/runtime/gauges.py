"""Gauges read from the live parts when Prometheus scrapes (set once, never updated by hand)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial

from prometheus_client import Gauge

from gateway.admission.controller import PoolAdmission
from gateway.admission.decision import PROBE
from gateway.admission.queue import Lane, Priority
from gateway.admission.saturation import State
from gateway.backends.breaker import BreakerState
from gateway.backends.state import BackendState
from gateway.metrics import GatewayMetrics

_BREAKER_LEVEL = {BreakerState.CLOSED: 0.0, BreakerState.HALF_OPEN: 1.0, BreakerState.OPEN: 2.0}


def _standard_wait(admission: PoolAdmission) -> float:
    return admission.predict(PROBE).wait_s


def _in_state(admission: PoolAdmission, state: State) -> float:
    return 1.0 if admission.state().state is state else 0.0


def _or_nan(value: float | None) -> float:
    # Prometheus' way to say "no value yet" for a gauge that exists.
    return math.nan if value is None else value


def breaker_level(state: BackendState) -> float:
    """0 closed, 1 half-open, 2 open: read at scrape time, as the breaker moves by the clock."""
    return _BREAKER_LEVEL[state.breaker.state]


def watch_admission(m: GatewayMetrics, admission: PoolAdmission) -> None:
    """A pool's limit, ladder step, standard wait, state, objective and queue depths."""
    name = admission.pool.name
    m.concurrency_limit.labels(name).set_function(lambda: admission.limit.limit)
    m.ladder_step.labels(name).set_function(lambda: admission.step)
    m.estimated_wait.labels(name).set_function(partial(_standard_wait, admission))
    for state in State:
        m.pool_state.labels(name, state.value).set_function(partial(_in_state, admission, state))
    objective = admission.objective
    if objective is not None:
        m.ttft_objective.labels(name).set(objective.ttft_s)
    for lane in Lane:
        for priority in Priority:
            m.queue_depth.labels(name, lane.value, priority.name.lower()).set_function(
                partial(admission.queue.depth, lane, priority)
            )


def watch_backends(m: GatewayMetrics, states: Iterable[BackendState]) -> None:
    """Per-backend gauges, read from the live states."""
    readers: list[tuple[Gauge, Callable[[BackendState], float]]] = [
        (m.backend_waiting, lambda s: s.load.waiting),
        (m.backend_running, lambda s: s.load.running),
        (m.backend_kv_usage, lambda s: s.load.kv_usage),
        (m.backend_prefix_hit_rate, lambda s: _or_nan(s.prefix_hit_rate)),
        (m.backend_spec_acceptance, lambda s: _or_nan(s.spec_acceptance)),
        (m.backend_inflight, lambda s: float(s.inflight)),
        (m.backend_chars_per_token, lambda s: s.token_count.chars_per_token),
    ]
    live = list(states)
    for gauge, read in readers:
        gauge.clear()  # backends a reload removed
        for state in live:
            gauge.labels(state.name, state.spec.pool).set_function(partial(read, state))
