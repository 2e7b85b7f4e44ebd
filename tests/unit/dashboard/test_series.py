"""Each pool's point, read from the gateway's own instruments filled directly, by tables:
admissions, shed rate by cause and priority, objective, predicted and observed TTFT
quantiles, the prediction's error, queue depth and Retry-After; after dispatch, hedges by
event, failovers by reason, continuations by result and the extra load share; and the point as
of now that the dashboard's table shows and its charts end on."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from gateway.dashboard.history import History, PoolPoint
from gateway.dashboard.snapshot import snapshot
from gateway.edge.dashboard_data import history_view
from gateway.metrics import GatewayMetrics
from gateway.recovery.counters import RecoveryMetrics

Fill = Callable[[GatewayMetrics], None]


def nothing(m: GatewayMetrics) -> None:
    return None


def refusals(m: GatewayMetrics) -> None:
    for _ in range(20):
        m.shed.labels("p", "queue_full", "sheddable", "hard_cap").inc()
    for _ in range(5):
        m.shed.labels("p", "objective_unmeetable", "standard", "saturated").inc()
    m.shed.labels("other", "queue_full", "sheddable", "hard_cap").inc()  # another pool's


def objective(m: GatewayMetrics) -> None:
    m.ttft_objective.labels("p").set(2.0)


def _metrics() -> GatewayMetrics:
    """Instruments whose bounded labels know the pool ``p`` (as a policy naming it would)."""
    metrics = GatewayMetrics(CollectorRegistry())
    metrics.bounds.use(models=[], tenants=[], pools=["p"], backends=[])
    return metrics


def observed(m: GatewayMetrics) -> None:
    for length in ("short", "long"):  # length classes are summed
        for _ in range(50):
            m.ttft.labels("p", length, "miss").observe(0.15)


def predicted(m: GatewayMetrics) -> None:
    for _ in range(99):
        m.ttft_predicted.labels("p").observe(0.4)
    m.ttft_predicted.labels("p").observe(4.0)


def retry_after(m: GatewayMetrics) -> None:
    for seconds in (3, 3, 6):
        m.retry_after.labels("p").observe(seconds)


def admitted(m: GatewayMetrics) -> None:
    m.admitted.labels("p").inc(15)


def prediction_error(m: GatewayMetrics) -> None:
    for direction in ("over", "under"):  # both directions: the error's size
        for _ in range(50):
            m.ttft_prediction_error.labels("p", direction).observe(0.15)


def queue(m: GatewayMetrics) -> None:
    m.queue_depth.labels("p", "short", "standard").set(4)
    m.queue_depth.labels("p", "long", "sheddable").set(3)
    m.queue_depth.labels("other", "short", "standard").set(9)


EMPTY: dict[str, Any] = {
    "objective_s": None,
    "predicted_p50_s": None,
    "predicted_p99_s": None,
    "observed_p50_s": None,
    "observed_p99_s": None,
    "shed_per_s": {},
    "queue_depth": 0.0,
    "retry_after_mean_s": None,
    "retry_after_p99_s": None,
    "admitted_per_s": 0.0,
    "prediction_error_p90_s": None,
    "hedges_per_s": {},
    "failovers_per_s": {},
    "continuations_per_s": {},
    "extra_share": None,
}
# id -> (what happened in the 5 s interval, the fields of pool p's point that differ from EMPTY)
SERIES: dict[str, tuple[Fill, dict[str, Any]]] = {
    "nothing happened": (nothing, {}),
    "shed per second by cause and priority": (
        refusals,
        {"shed_per_s": {("hard_cap", "sheddable"): 4.0, ("saturated", "standard"): 1.0}},
    ),
    "the objective as set": (objective, {"objective_s": 2.0}),
    # 100 observations in (0.1, 0.2]: interpolated inside the bucket
    "observed TTFT, all lengths": (observed, {"observed_p50_s": 0.15, "observed_p99_s": 0.199}),
    # 99 in (0.3, 0.5], one in (3, 5]: the p99 is the top of the first bucket
    "predicted TTFT": (predicted, {"predicted_p50_s": 0.40101, "predicted_p99_s": 0.5}),
    # mean (3 + 3 + 6) / 3; p99: rank 2.97 lands in (5, 10] holding one
    "Retry-After": (retry_after, {"retry_after_mean_s": 4.0, "retry_after_p99_s": 9.85}),
    "queue depth over lanes and priorities": (queue, {"queue_depth": 7.0}),
    "admitted per second, none extra": (admitted, {"admitted_per_s": 3.0, "extra_share": 0.0}),
    # 100 errors in (0.1, 0.2]: the p90 interpolated inside it
    "prediction error": (prediction_error, {"prediction_error_p90_s": 0.19}),
}


@pytest.mark.parametrize(("fill", "want"), SERIES.values(), ids=SERIES)
def test_point_of_one_interval(fill: Fill, want: dict[str, Any]) -> None:
    metrics = _metrics()
    metrics.ttft_predicted.labels("p")  # the pool exists in the registry
    history = History(interval_s=5, horizon_s=60)
    history.sample(snapshot(metrics, 100.0))
    fill(metrics)
    point = history.sample(snapshot(metrics, 105.0))
    assert point is not None
    got, expected = asdict(point.pools["p"]), {**EMPTY, **want}
    for rates in ("shed_per_s", "hedges_per_s", "failovers_per_s", "continuations_per_s"):
        assert got.pop(rates) == pytest.approx(expected.pop(rates)), rates
    assert got == pytest.approx(expected, abs=1e-3)


AfterFill = Callable[[RecoveryMetrics, GatewayMetrics], None]


def hedges(r: RecoveryMetrics, m: GatewayMetrics) -> None:
    m.admitted.labels("p").inc(100)
    for event, times in (("sent", 10), ("won", 4), ("cancelled", 6)):
        r.hedges.labels("p", event).inc(times)
    r.hedges.labels("other", "sent").inc(50)  # another pool's


def failovers(r: RecoveryMetrics, m: GatewayMetrics) -> None:
    m.admitted.labels("p").inc(50)
    for reason, times in (("stall", 5), ("error", 2), ("taken_back", 3)):
        r.failovers.labels("p", reason).inc(times)


def both(r: RecoveryMetrics, m: GatewayMetrics) -> None:
    m.admitted.labels("p").inc(50)
    r.hedges.labels("p", "sent").inc(3)
    r.hedges.labels("p", "won").inc(3)  # a won hedge was sent: counted once
    r.failovers.labels("p", "stall").inc(2)


def continuations(r: RecoveryMetrics, m: GatewayMetrics) -> None:
    m.admitted.labels("p").inc(10)
    for result, times in (("ok", 5), ("failed", 1), ("impossible", 2)):
        r.continuations.labels("p", result).inc(times)


def none_admitted(r: RecoveryMetrics, m: GatewayMetrics) -> None:
    r.hedges.labels("p", "sent").inc(2)  # for requests admitted before the span


# id -> (what happened after dispatch in the 5 s interval, the fields that differ from EMPTY)
AFTER: dict[str, tuple[AfterFill, dict[str, Any]]] = {
    "hedges per second by event; the share: 10 sent of 100 admitted": (hedges, {
        "admitted_per_s": 20.0, "hedges_per_s": {"sent": 2.0, "won": 0.8, "cancelled": 1.2},
        "extra_share": 0.1}),
    "failovers by reason, each an extra request": (failovers, {
        "admitted_per_s": 10.0, "failovers_per_s": {"stall": 1.0, "error": 0.4,
                                                    "taken_back": 0.6}, "extra_share": 0.2}),
    "hedges sent plus failovers over admitted": (both, {
        "admitted_per_s": 10.0, "hedges_per_s": {"sent": 0.6, "won": 0.6},
        "failovers_per_s": {"stall": 0.4}, "extra_share": 0.1}),
    "continuations by result: no extra share": (continuations, {
        "admitted_per_s": 2.0, "continuations_per_s": {"ok": 1.0, "failed": 0.2,
                                                       "impossible": 0.4}, "extra_share": 0.0}),
    "nothing admitted: no share": (none_admitted, {"hedges_per_s": {"sent": 0.4}}),
}  # fmt: skip


@pytest.mark.parametrize(("fill", "want"), AFTER.values(), ids=AFTER)
def test_after_dispatch_in_one_interval(fill: AfterFill, want: dict[str, Any]) -> None:
    metrics = _metrics()
    recovery = RecoveryMetrics(metrics.registry)
    metrics.ttft_predicted.labels("p")  # the pool exists in the registry
    history = History(interval_s=5, horizon_s=60)
    history.sample(snapshot(metrics, 100.0, recovery.instruments()))
    fill(recovery, metrics)
    point = history.sample(snapshot(metrics, 105.0, recovery.instruments()))
    assert point is not None
    got, expected = asdict(point.pools["p"]), {**EMPTY, **want}
    for rates in ("shed_per_s", "hedges_per_s", "failovers_per_s", "continuations_per_s"):
        assert got.pop(rates) == pytest.approx(expected.pop(rates)), rates
    assert got == pytest.approx(expected, abs=1e-3)


def test_after_dispatch_counts_over_the_last_10_seconds() -> None:
    """A hedge sent at 5 s counts in the points at 5 and 10 s (10 s back), not at 15 s."""
    metrics = _metrics()
    recovery = RecoveryMetrics(metrics.registry)
    history = History(interval_s=5, horizon_s=900)
    shares = []
    for t, admitted, sent in ((0, 0, 0), (5, 20, 1), (10, 20, 0), (15, 20, 0)):
        metrics.admitted.labels("p").inc(admitted)
        recovery.hedges.labels("p", "sent").inc(sent)
        point = history.sample(snapshot(metrics, float(t), recovery.instruments()))
        if point is not None:
            shares.append(point.pools["p"].extra_share)
    assert shares == [pytest.approx(1 / 20), pytest.approx(1 / 40), 0.0]


def test_quantiles_count_only_the_last_30_seconds() -> None:
    metrics = _metrics()
    history = History(interval_s=5, horizon_s=900)
    ttft = metrics.ttft.labels("p", "short", "miss")
    for t in range(0, 65, 5):  # slow requests for the first 30 s, fast ones after
        ttft.observe(10.0 if t < 30 else 0.05)
        history.sample(snapshot(metrics, float(t)))
    by_time = {p.at: p.pools["p"].observed_p99_s for p in history.points()}
    assert by_time[25] == pytest.approx(9.9, abs=0.1)  # all slow
    assert by_time[60] == pytest.approx(0.0499, abs=1e-3)  # the slow ones left the window


def test_shed_rate_over_the_last_10_seconds() -> None:
    metrics = _metrics()
    history = History(interval_s=5, horizon_s=900)
    shed = metrics.shed.labels("p", "queue_full", "critical", "hard_cap")
    rates = []
    for t, refused in ((0, 0), (5, 10), (10, 0), (15, 0)):
        shed.inc(refused)
        point = history.sample(snapshot(metrics, float(t)))
        if point is not None:
            rates.append(dict(point.pools["p"].shed_per_s))
    part = ("hard_cap", "critical")
    assert rates == [{part: 2.0}, {part: 1.0}, {}]


def test_history_as_json() -> None:
    metrics = _metrics()
    history = History(interval_s=5, horizon_s=60)
    history.sample(snapshot(metrics, 100.0))
    refusals(metrics)
    objective(metrics)
    history.sample(snapshot(metrics, 105.0))
    view = history_view(history, 106.5, None)
    assert {k: view[k] for k in ("now", "interval_s", "horizon_s")} == {
        "now": 106.5,
        "interval_s": 5,
        "horizon_s": 60,
    }
    [point] = view["points"]
    assert point["at"] == 105.0
    assert point["pools"]["p"]["shed_per_s"] == {
        "hard_cap:sheddable": 4.0,
        "saturated:standard": 1.0,
    }
    assert point["pools"]["p"]["objective_s"] == 2.0
    assert point["pools"]["p"]["hedges_per_s"] == {}
    assert point["pools"]["p"]["extra_share"] is None  # nothing admitted
    assert point["pools"]["other"]["objective_s"] is None
    assert history_view(history, 106.5, 105.0)["points"] == []


def test_a_pool_point_has_every_field_the_page_draws() -> None:
    fields = set(PoolPoint.__dataclass_fields__)
    assert fields == set(EMPTY)


def test_snapshot_reads_cache_lookups_and_skips_gauges_without_a_value() -> None:
    metrics = _metrics()
    for result, times in (("miss", 3), ("exact", 2), ("semantic", 1), ("bypass", 5)):
        metrics.cache_lookups.labels(result).inc(times)
    metrics.ttft_objective.labels("p").set(math.nan)  # "no value yet"
    metrics.ttft_objective.labels("q").set(1.5)
    snap = snapshot(metrics, 7.0)
    assert snap.counters["cache_lookups"]["*"] == 6  # bypasses are no lookup
    assert snap.counters["cache_hits"]["*"] == 3
    assert snap.gauges["objective"] == {"q": 1.5}


def test_the_current_point_reads_the_same_windows_without_being_kept() -> None:
    """The table's figures are the charts' last point: over the same windows, at the moment
    of the page's fetch, between two samples of the ring."""
    metrics = _metrics()
    history = History(interval_s=5, horizon_s=900)
    assert history.current(snapshot(metrics, 0.0)) is None  # nothing kept yet
    shed = metrics.shed.labels("p", "queue_full", "standard", "hard_cap")
    history.sample(snapshot(metrics, 0.0))
    shed.inc(10)
    history.sample(snapshot(metrics, 5.0))
    shed.inc(20)  # a burst just after the last sample
    now = history.current(snapshot(metrics, 7.0))
    assert now is not None
    assert dict(now.pools["p"].shed_per_s) == {("hard_cap", "standard"): 30 / 7}
    assert [p.at for p in history.points()] == [5.0]  # not kept
    later = history.sample(snapshot(metrics, 10.0))  # the ring's next point, same windows
    assert later is not None
    assert dict(later.pools["p"].shed_per_s) == {("hard_cap", "standard"): 3.0}
