"""One reading of the gateway's cumulative figures per pool, for the dashboard's windows.

Only the instruments the dashboard shows are read, not the whole registry with its many
other histograms: this runs on the event loop, every few seconds and on every page refresh.
What happens after dispatch (hedges, failovers, continuations: ``recovery/counters.py``) is
read from the instruments the caller passes (``also``), kept per pool and per value of the
label that tells them apart, as ``hedges:sent``, ``failovers:stall``, ``continuations:ok``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from prometheus_client.metrics import MetricWrapperBase

from gateway.dashboard.window import Buckets, Part, Snapshot
from gateway.metrics import GatewayMetrics

# Counters summed per pool (over their other labels), by the sample name the registry reports.
COUNTERS = {
    "gateway_admitted_total": "admitted",
    "gateway_shed_total": "shed",
    "gateway_requests_total": "finished",
    "gateway_retry_after_seconds_sum": "retry_after_sum",
}
# Histograms' buckets summed per pool (TTFT over its length classes, the prediction error
# over its two directions: the distribution of |observed - predicted|).
HISTOGRAMS = {
    "gateway_time_to_first_token_seconds_bucket": "ttft",
    "gateway_ttft_predicted_seconds_bucket": "predicted",
    "gateway_ttft_prediction_error_seconds_bucket": "prediction_error",
    "gateway_retry_after_seconds_bucket": "retry_after",
}
# Gauges summed per pool (the queue over its lanes and priorities).
GAUGES = {
    "gateway_ttft_objective_seconds": "objective",
    "gateway_queue_depth": "queue_depth",
}
# Counters kept per pool and per value of one label, as "<key>:<value>" (``also``).
BY_LABEL = {
    "gateway_hedges_total": ("hedges", "event"),
    "gateway_failovers_total": ("failovers", "reason"),
    "gateway_continuations_total": ("continuations", "result"),
}
SHED = "gateway_shed_total"
CACHE_LOOKUPS = "gateway_cache_lookups_total"
ALL = "*"  # the pseudo-pool of gateway-wide counters

_Table = defaultdict[str, defaultdict[str, float]]


def _shown(m: GatewayMetrics) -> tuple[MetricWrapperBase, ...]:
    return (
        m.admitted.metric,
        m.shed,
        m.requests.metric,
        m.ttft.metric,
        m.ttft_predicted.metric,
        m.ttft_prediction_error.metric,
        m.retry_after,
        m.ttft_objective,
        m.queue_depth,
        m.cache_lookups.metric,
    )


def snapshot(
    metrics: GatewayMetrics, at: float, also: Iterable[MetricWrapperBase] = ()
) -> Snapshot:
    """The figures at ``at``; ``also``: the instruments of what happens after dispatch."""
    counters: _Table = defaultdict(lambda: defaultdict(float))
    gauges: _Table = defaultdict(lambda: defaultdict(float))
    buckets: defaultdict[str, defaultdict[str, defaultdict[float, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    shed: defaultdict[str, defaultdict[Part, float]] = defaultdict(lambda: defaultdict(float))
    instruments = (*_shown(metrics), *also)
    families = (family for instrument in instruments for family in instrument.collect())
    for family in families:
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, sample.value
            if name == CACHE_LOOKUPS:
                _count_cache(counters, labels["result"], value)
                continue
            pool = labels.get("pool")
            if pool is None or math.isnan(value):
                continue  # a gauge that has no value yet
            if name in COUNTERS:
                counters[COUNTERS[name]][pool] += value
            elif name in BY_LABEL:
                key, label = BY_LABEL[name]
                counters[f"{key}:{labels[label]}"][pool] += value
            if name == SHED:
                shed[pool][(labels["cause"], labels["priority"])] += value
            elif name in HISTOGRAMS:
                buckets[HISTOGRAMS[name]][pool][float(labels["le"])] += value
            elif name in GAUGES:
                gauges[GAUGES[name]][pool] += value
    histograms = {
        key: {pool: _sorted(b) for pool, b in per_pool.items()} for key, per_pool in buckets.items()
    }
    return Snapshot(at, counters, histograms, gauges, shed)


def _sorted(buckets: dict[float, float]) -> Buckets:
    return tuple(sorted(buckets.items()))


def _count_cache(counters: _Table, result: str, value: float) -> None:
    if result != "bypass":
        counters["cache_lookups"][ALL] += value
    if result in ("exact", "semantic"):
        counters["cache_hits"][ALL] += value
