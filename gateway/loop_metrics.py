"""Counters, histograms and gauges updated from one thread (the event loop), without a lock
per value.

Why: prometheus_client keeps every value of an instrument in a value object with a
``threading.Lock``, taken on each update; a histogram's ``observe`` adds to its sum and then
walks its bucket bounds in Python until the first one the amount fits under (each a locked
value again). The gateway makes about a dozen such updates per request, all on the event
loop's thread, so the locks protect nothing there and the walk costs a Python loop iteration
per bucket.

Algorithm: ``LoopCounter``, ``LoopHistogram`` and ``LoopGauge`` are prometheus_client's
``Counter``, ``Histogram`` and ``Gauge`` (names, help, labels, children, registry,
``collect``, ``describe``, ``remove`` and ``clear`` all theirs) with only the per-child state
replaced. A counter or gauge child holds its value as a float; a histogram child holds its
sum and one count per bucket, not cumulative, and ``observe`` finds the bucket with
``bisect_left`` on the upper bounds: the first bound ``>= amount``, prometheus_client's
``amount <= bound``. The bisection puts NaN first, so the found bound is compared once more:
NaN falls in no bucket but is added to the sum, as there. At collection the counts are summed
into the cumulative ``_bucket`` samples, followed by ``_count``, ``_sum`` (when the first
bound is not negative) and ``_created`` (unless prometheus_client's created series are
disabled): each child's samples are prometheus_client's for the same updates. Exemplars are
not kept (the gateway gives none): passing one raises. A gauge is the default kind only (no
multiprocess modes).

Only for instruments updated from a single thread: ``+=`` on a float is not atomic across
threads. A scrape reading while the loop updates sees each value whole (the GIL), as with
prometheus_client, whose histogram is not read atomically either.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString


def _created_on() -> bool:
    """prometheus_client's switch for ``_created`` series (``disable_created_metrics``)."""
    return bool(prometheus_metrics._use_created)


def _go_float(bound: float) -> str:
    """A bound as its ``le`` label (prometheus_client's spelling: ``+Inf``, ``0.005``)."""
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]


def _not_observable(metric: Counter | Gauge | Histogram) -> ValueError:
    """prometheus_client's refusal of an update to a labelled instrument without labels."""
    return ValueError(f"{metric._type} metric is missing label values")


def _exemplar_refused() -> ValueError:
    return ValueError("exemplars are not kept by the gateway's loop instruments")


class LoopCounter(Counter):
    """A ``Counter`` whose children hold a plain float (one thread updates it)."""

    def _metric_init(self) -> None:
        self._total = 0.0
        self._created = time.time()

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        if exemplar:
            raise _exemplar_refused()
        try:
            self._total += amount
        except AttributeError:  # a labelled instrument itself: no value of its own
            raise _not_observable(self) from None

    def reset(self) -> None:
        self._total = 0.0
        self._created = time.time()

    def _child_samples(self) -> Iterable[Sample]:
        total = Sample("_total", {}, self._total, None, None)
        if _created_on():
            return (total, Sample("_created", {}, self._created, None, None))
        return (total,)


class LoopHistogram(Histogram):
    """A ``Histogram`` whose children hold plain floats and find a bucket by bisection."""

    def _metric_init(self) -> None:
        self._bounds = tuple(self._upper_bounds)
        self._les = tuple(_go_float(bound) for bound in self._bounds)
        self._counts = [0.0] * len(self._bounds)
        self._sum_value = 0.0
        self._created = time.time()

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if exemplar:
            raise _exemplar_refused()
        try:
            bounds = self._bounds
        except AttributeError:  # a labelled instrument itself: no values of its own
            raise _not_observable(self) from None
        self._sum_value += amount
        at = bisect_left(bounds, amount)  # the last bound is +Inf: ``at`` is an index
        if amount <= bounds[at]:  # but for NaN (put first by the bisection, counted nowhere)
            self._counts[at] += 1.0

    def _child_samples(self) -> Iterable[Sample]:
        samples: list[Sample] = []
        acc = 0.0
        for le, count in zip(self._les, self._counts, strict=True):
            acc += count
            samples.append(Sample("_bucket", {"le": le}, acc, None, None))
        samples.append(Sample("_count", {}, acc, None, None))
        if self._bounds[0] >= 0:
            samples.append(Sample("_sum", {}, self._sum_value, None, None))
        if _created_on():
            samples.append(Sample("_created", {}, self._created, None, None))
        return tuple(samples)


class LoopGauge(Gauge):
    """A ``Gauge`` whose children hold a plain float (one thread updates it); ``set_function``
    still replaces the value by the function's, as there."""

    def _metric_init(self) -> None:
        self._level = 0.0

    def inc(self, amount: float = 1) -> None:
        try:
            self._level += amount
        except AttributeError:  # a labelled instrument itself: no value of its own
            raise _not_observable(self) from None

    def dec(self, amount: float = 1) -> None:
        try:
            self._level -= amount
        except AttributeError:
            raise _not_observable(self) from None

    def set(self, value: float) -> None:
        if self._labelnames and not self._labelvalues:
            raise _not_observable(self)
        self._level = float(value)

    def _child_samples(self) -> Iterable[Sample]:
        return (Sample("", {}, self._level, None, None),)
