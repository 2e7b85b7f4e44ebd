"""Bounded label values: each fit on values in and out of the policy's sets."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry, Counter

from gateway.metric_labels import Bounded, LabelBounds


def _bounds() -> LabelBounds:
    bounds = LabelBounds()
    bounds.use(models=["fast"], tenants=["alpha"], pools=["small"], backends=["small-0"])
    return bounds


# id -> (fit, value, label value)
FITS: dict[str, tuple[Callable[[LabelBounds], Callable[[str], str]], str, str]] = {
    "known model": (lambda b: b.model, "fast", "fast"),
    "made-up model": (lambda b: b.model, "gpt-9-turbo", "unknown"),
    "known tenant": (lambda b: b.tenant, "alpha", "alpha"),
    "unknown tenant": (lambda b: b.tenant, "mallory", "unknown"),
    "known pool": (lambda b: b.pool, "small", "small"),
    "unknown pool": (lambda b: b.pool, "huge", "unknown"),
    "no pool (a cache hit)": (lambda b: b.pool, "none", "none"),
    "known backend": (lambda b: b.backend, "small-0", "small-0"),
    "nothing tried": (lambda b: b.backend, "none", "none"),
    "unknown backend": (lambda b: b.backend, "small-9", "unknown"),
    "status": (lambda b: b.status, "404", "404"),
    "client gone": (lambda b: b.status, "499", "499"),
    "status too high": (lambda b: b.status, "600", "other"),
    "status not a number": (lambda b: b.status, "4x4", "other"),
    "status too long": (lambda b: b.status, "4040", "other"),
    "gateway error kind": (lambda b: b.error_kind, "upstream_timeout", "upstream_timeout"),
    "backend's own code": (lambda b: b.error_kind, "context_length_exceeded", "other"),
    "cache hit": (lambda b: b.cache, "semantic", "semantic"),
    "cache miss": (lambda b: b.cache, "miss", "miss"),
    "cache stage not run": (lambda b: b.cache, "", "bypass"),
    "made-up cache result": (lambda b: b.cache, "refresh", "bypass"),
}


@pytest.mark.parametrize(("fit", "value", "label"), FITS.values(), ids=list(FITS))
def test_fits(fit: Callable[[LabelBounds], Callable[[str], str]], value: str, label: str) -> None:
    assert fit(_bounds())(value) == label


def test_a_new_policy_brings_its_own_sets_and_bounded_counts_through_them() -> None:
    bounds = _bounds()
    registry = CollectorRegistry()
    counter = Bounded(
        Counter("c", "doc", ["model", "status"], registry=registry), bounds.model, bounds.status
    )
    counter.labels("fast", "200").inc()
    counter.labels("made-up", "200").inc()
    bounds.use(models=["made-up"], tenants=[], pools=[], backends=[])
    counter.labels("made-up", "200").inc()
    counter.labels("fast", "200").inc()
    assert registry.get_sample_value("c_total", {"model": "fast", "status": "200"}) == 1
    assert registry.get_sample_value("c_total", {"model": "unknown", "status": "200"}) == 2
    assert registry.get_sample_value("c_total", {"model": "made-up", "status": "200"}) == 1
    with pytest.raises(ValueError, match="expected 2 label values"):
        counter.labels("fast")


# (values asked, in order) -> (children kept afterwards, the count of each series)
KEPT: dict[str, tuple[list[tuple[str, str]], int, dict[tuple[str, str], float]]] = {
    "in the sets: kept once": (
        [("fast", "200")] * 3,
        1,
        {("fast", "200"): 3},
    ),
    "mapped elsewhere: never kept": (
        [(f"made-up-{i}", "200") for i in range(50)],
        0,
        {("unknown", "200"): 50},
    ),
    "a status out of range: never kept": (
        [("fast", "600"), ("fast", "600"), ("fast", "201")],
        1,
        {("fast", "other"): 2, ("fast", "201"): 1},
    ),
}


@pytest.mark.parametrize(("asked", "kept", "counts"), KEPT.values(), ids=list(KEPT))
def test_children_kept_only_for_values_in_the_sets(
    asked: list[tuple[str, str]], kept: int, counts: dict[tuple[str, str], float]
) -> None:
    bounds = _bounds()
    registry = CollectorRegistry()
    counter = Bounded(
        Counter("c", "doc", ["model", "status"], registry=registry), bounds.model, bounds.status
    )
    for values in asked:
        counter.labels(*values).inc()
    assert len(counter._children) == kept  # the cache is no larger than the sets allow
    for (model, status), count in counts.items():
        labels = {"model": model, "status": status}
        assert registry.get_sample_value("c_total", labels) == count


def test_fits_of_two_bounds_are_refused() -> None:
    counter = Counter("c", "doc", ["model", "tenant"], registry=CollectorRegistry())
    with pytest.raises(ValueError, match="one LabelBounds"):
        Bounded(counter, _bounds().model, _bounds().tenant)
