"""LoopCounter, LoopHistogram and LoopGauge expose what prometheus_client's Counter,
Histogram and Gauge expose for the same updates (only ``_created``'s time differs: each reads
the wall clock)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.metrics import MetricWrapperBase

from gateway import metrics as gateway_metrics
from gateway.host.metrics_merge import merge
from gateway.loop_metrics import LoopCounter, LoopGauge, LoopHistogram
from gateway.metrics import LATENCY_BUCKETS, GatewayMetrics

_CREATED = re.compile(r"^(\S+_created(?:\{[^}]*\})?) \S+$", re.MULTILINE)

Updates = list[tuple[tuple[str, ...], float]]  # (label values, amount) in order

# (name, label names, buckets, updates)
HISTOGRAMS: list[tuple[str, list[str], tuple[float, ...], Updates]] = [
    ("none_yet", ["pool"], LATENCY_BUCKETS, []),
    ("unlabelled_empty", [], (0.1, 1.0), []),
    ("unlabelled", [], (0.1, 1.0), [((), 0.05), ((), 0.1), ((), 0.5), ((), 7.0)]),
    (
        "on_bounds",  # an amount equal to a bound is counted in that bound's bucket
        ["pool", "length"],
        LATENCY_BUCKETS,
        [(("a", "short"), b) for b in LATENCY_BUCKETS] + [(("b", "long"), 300.0)],
    ),
    (
        "edges",
        ["pool"],
        (0.0, 0.5, 1.0),
        [(("a",), 0.0), (("a",), -1.0), (("a",), 1e9), (("a",), math.inf), (("b",), 1e-12)],
    ),
    ("nan_sum_only", ["pool"], (0.5, 1.0), [(("a",), math.nan), (("a",), 0.7)]),
    ("negative_bounds_no_sum", [], (-2.0, -1.0, 0.0), [((), -1.5), ((), 3.0)]),
    ("infinite_last", ["k"], (1.0, 2.0, math.inf), [(("x",), 1.5), (("x",), 99.0)]),
    ("int_bounds", ["pool"], (1, 2, 4, 8), [(("a",), 3), (("a",), 8), (("b",), 9)]),
]

# (name, label names, updates)
COUNTERS: list[tuple[str, list[str], Updates]] = [
    ("none_yet", ["pool"], []),
    ("unlabelled", [], [((), 1.0), ((), 2.5)]),
    (
        "labelled",
        ["model", "status"],
        [(("m", "200"), 1.0), (("m", "500"), 1.0), (("m", "200"), 3)],
    ),
    ("zero", ["pool"], [(("a",), 0.0)]),
]


def _text(registry: CollectorRegistry) -> str:
    """The exposition with every ``_created`` value blanked (the time of each child's birth)."""
    return _CREATED.sub(r"\1 T", generate_latest(registry).decode())


def _apply(metric: MetricWrapperBase, updates: Updates, update: str) -> None:
    for values, amount in updates:
        child = metric.labels(*values) if values else metric
        getattr(child, update)(amount)


@pytest.fixture(params=[True, False], ids=["created", "no_created"])
def created(request: pytest.FixtureRequest) -> Iterator[None]:
    """Both settings of prometheus_client's created series."""
    if request.param:
        prometheus_metrics.enable_created_metrics()
    else:
        prometheus_metrics.disable_created_metrics()
    yield
    prometheus_metrics.enable_created_metrics()


@pytest.mark.parametrize(("name", "labels", "buckets", "updates"), HISTOGRAMS)
@pytest.mark.usefixtures("created")
def test_histogram_exposition_is_prometheus_clients(
    name: str, labels: list[str], buckets: tuple[float, ...], updates: Updates
) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    doc = f"{name} help"
    _apply(LoopHistogram(name, doc, labels, buckets=buckets, registry=ours), updates, "observe")
    _apply(Histogram(name, doc, labels, buckets=buckets, registry=theirs), updates, "observe")
    assert _text(ours) == _text(theirs)
    assert ours.get_sample_value(f"{name}_count", dict(zip(labels, "a", strict=False))) == (
        theirs.get_sample_value(f"{name}_count", dict(zip(labels, "a", strict=False)))
    )


@pytest.mark.parametrize(("name", "labels", "updates"), COUNTERS)
@pytest.mark.usefixtures("created")
def test_counter_exposition_is_prometheus_clients(
    name: str, labels: list[str], updates: Updates
) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    _apply(LoopCounter(name, "help", labels, registry=ours), updates, "inc")
    _apply(Counter(name, "help", labels, registry=theirs), updates, "inc")
    assert _text(ours) == _text(theirs)


# (name, label names, updates: (label values, "inc" | "dec" | "set", amount))
GAUGES: list[tuple[str, list[str], list[tuple[tuple[str, ...], str, float]]]] = [
    ("none_yet", ["pool"], []),
    ("unlabelled_zero", [], []),
    ("in_and_out", ["pool"], [(("a",), "inc", 1), (("a",), "inc", 1), (("a",), "dec", 1)]),
    ("below_zero", ["pool"], [(("a",), "dec", 2.5), (("b",), "inc", 0.5)]),
    ("set_then_inc", [], [((), "set", 7), ((), "inc", 0.25), ((), "set", -1.5)]),
]


@pytest.mark.parametrize(("name", "labels", "updates"), GAUGES)
def test_gauge_exposition_is_prometheus_clients(
    name: str, labels: list[str], updates: list[tuple[tuple[str, ...], str, float]]
) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    for registry, kind in ((ours, LoopGauge), (theirs, Gauge)):
        gauge = kind(name, "help", labels, registry=registry)
        for values, update, amount in updates:
            getattr(gauge.labels(*values) if values else gauge, update)(amount)
    assert _text(ours) == _text(theirs)


def test_a_gauge_function_replaces_its_value() -> None:
    registry = CollectorRegistry()
    gauge = LoopGauge("g", "help", ["pool"], registry=registry)
    gauge.labels("a").inc(3)
    gauge.labels("a").set_function(lambda: 42.0)
    assert registry.get_sample_value("g", {"pool": "a"}) == 42.0


def test_a_counter_reset_starts_again_from_zero() -> None:
    registry = CollectorRegistry()
    counter = LoopCounter("c", "help", registry=registry)
    counter.inc(5)
    counter.reset()
    counter.inc()
    assert registry.get_sample_value("c_total") == 1.0


REFUSALS: list[tuple[str, Callable[[CollectorRegistry], None], str]] = [
    (
        "negative_increment",
        lambda r: LoopCounter("c", "h", registry=r).inc(-1),
        "Counters can only be incremented by non-negative amounts.",
    ),
    (
        "counter_without_labels",
        lambda r: LoopCounter("c", "h", ["pool"], registry=r).inc(),
        "counter metric is missing label values",
    ),
    (
        "histogram_without_labels",
        lambda r: LoopHistogram("h", "h", ["pool"], registry=r).observe(1.0),
        "histogram metric is missing label values",
    ),
    (
        "gauge_inc_without_labels",
        lambda r: LoopGauge("g", "h", ["pool"], registry=r).inc(),
        "gauge metric is missing label values",
    ),
    (
        "gauge_dec_without_labels",
        lambda r: LoopGauge("g", "h", ["pool"], registry=r).dec(),
        "gauge metric is missing label values",
    ),
    (
        "gauge_set_without_labels",
        lambda r: LoopGauge("g", "h", ["pool"], registry=r).set(1),
        "gauge metric is missing label values",
    ),
    (
        "counter_exemplar",
        lambda r: LoopCounter("c", "h", registry=r).inc(1, {"trace_id": "x"}),
        "exemplars are not kept",
    ),
    (
        "histogram_exemplar",
        lambda r: LoopHistogram("h", "h", registry=r).observe(1.0, {"trace_id": "x"}),
        "exemplars are not kept",
    ),
]


@pytest.mark.parametrize(("case", "update", "message"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals(case: str, update: Callable[[CollectorRegistry], None], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        update(CollectorRegistry())


def _loop_instruments(metrics: GatewayMetrics) -> list[str]:
    """The names of the gateway's instruments that are loop instruments."""
    return [
        name
        for name, instrument in vars(metrics).items()
        if isinstance(
            getattr(instrument, "metric", instrument), LoopCounter | LoopHistogram | LoopGauge
        )
    ]


def _update(metrics: GatewayMetrics, names: list[str]) -> None:
    """The same updates to each named instrument (one child each when labelled)."""
    for name in names:
        instrument = getattr(metrics, name)
        metric = getattr(instrument, "metric", instrument)
        labels = metric._labelnames
        child = instrument.labels(*("none" for _ in labels)) if labels else metric
        for amount in (0.003, 0.2, 2.0, 400.0):
            if isinstance(metric, Counter | Gauge):
                child.inc(amount)
            else:
                child.observe(amount)


def test_the_gateways_exposition_is_the_one_prometheus_clients_classes_give(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = GatewayMetrics(CollectorRegistry())
    names = _loop_instruments(ours)
    assert {"requests", "ttft", "e2e", "tpot", "overhead", "admitted", "inflight"} <= set(names)
    monkeypatch.setattr(gateway_metrics, "LoopCounter", Counter)
    monkeypatch.setattr(gateway_metrics, "LoopGauge", Gauge)
    monkeypatch.setattr(gateway_metrics, "LoopHistogram", Histogram)
    theirs = GatewayMetrics(CollectorRegistry())
    assert _loop_instruments(theirs) == []
    _update(ours, names)
    _update(theirs, names)
    assert _text(ours.registry) == _text(theirs.registry)
    # and as ``serve --workers N`` merges the workers' texts
    assert merge({"0": _text(ours.registry), "1": _text(ours.registry)}) == merge(
        {"0": _text(theirs.registry), "1": _text(theirs.registry)}
    )
