"""Bounded metric labels: a label value a client or a backend can choose is mapped into a set
the policy (or the gateway's code) defines before it reaches Prometheus.

Why: every distinct label value is a new time series, kept in memory for the life of the
process and scraped from then on; a client sending made-up model names could otherwise grow
the gateway's memory and the monitoring system's without limit.

Decision table (label: kept when in -> otherwise):

- ``model``: the policy's public model names (and the name of the gateway's own summary
  calls) -> ``unknown``
- ``tenant``: the policy's tenants -> ``unknown``
- ``pool``, ``from_pool``, ``to_pool``: the policy's pools, and ``none`` (a cache hit:
  no pool served it) -> ``unknown``
- ``backend``: the policy's backends, and ``none`` (nothing tried) -> ``unknown``
- ``status``: an HTTP status, 100 to 599 -> ``other``
- ``cache``: the cache stage's results (``CACHE_RESULTS``) -> ``bypass`` (the stage did not
  run, so the cache was not used)
- error ``kind`` / retry ``reason``: ``ERROR_KINDS``, the gateway's own error codes and
  types -> ``other`` (a backend's error code is its own text)

The sets change only when a policy is swapped in (``LabelBounds.use``); labels of every
other instrument come from the compiled policy or from enumerations in the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from prometheus_client.metrics import MetricWrapperBase

UNKNOWN = "unknown"
OTHER = "other"
NO_BACKEND = "none"
NO_POOL = "none"
# "verify": the backend call of a sampled semantic hit (runtime/own_requests.py).
CACHE_RESULTS = frozenset({"miss", "exact", "semantic", "bypass", "verify"})

# What Outcome.error_kind and retry reasons can be when the gateway itself names the failure.
ERROR_KINDS = frozenset(
    {
        "upstream_connect",
        "upstream_timeout",
        "upstream_protocol",
        "upstream_status",
        "upstream_invalid",
        "upstream_stall",
        "taken_back",
        "total_timeout",
        "deadline_exceeded",
        "no_healthy_backend",
        "pool_saturated",
        "client_gone",
        "fallback",
        "error",
        "BadGateway",
        "GatewayTimeout",
        "RateLimited",
        "ServiceUnavailable",
        "UpstreamClientError",
    }
)

M = TypeVar("M", bound=MetricWrapperBase)
Fit = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class LabelSets:
    """The label values one policy defines."""

    models: frozenset[str] = frozenset()
    tenants: frozenset[str] = frozenset()
    pools: frozenset[str] = frozenset()
    backends: frozenset[str] = frozenset()


class LabelBounds:
    """The sets of the active policy, and one fit per kind of label."""

    def __init__(self) -> None:
        self.sets = LabelSets()

    def use(
        self,
        *,
        models: Iterable[str],
        tenants: Iterable[str],
        pools: Iterable[str],
        backends: Iterable[str],
    ) -> None:
        self.sets = LabelSets(
            frozenset(models), frozenset(tenants), frozenset(pools), frozenset(backends)
        )

    def model(self, value: str) -> str:
        return value if value in self.sets.models else UNKNOWN

    def tenant(self, value: str) -> str:
        return value if value in self.sets.tenants else UNKNOWN

    def pool(self, value: str) -> str:
        return value if value in self.sets.pools or value == NO_POOL else UNKNOWN

    def backend(self, value: str) -> str:
        return value if value in self.sets.backends or value == NO_BACKEND else UNKNOWN

    @staticmethod
    def status(value: str) -> str:
        return value if len(value) == 3 and value.isdigit() and "1" <= value[0] <= "5" else OTHER

    @staticmethod
    def cache(value: str) -> str:
        return value if value in CACHE_RESULTS else "bypass"

    @staticmethod
    def error_kind(value: str) -> str:
        return value if value in ERROR_KINDS else OTHER

    @staticmethod
    def fixed(value: str) -> str:
        """For labels whose values the code enumerates (token kinds, error types)."""
        return value


class Bounded(Generic[M]):
    """A labelled instrument whose label values go through their fits first; ``labels`` is
    the only way in, so no call site can add a value outside the sets.

    The children of label values that are in the sets as they are (each fit returned its
    value unchanged) are kept here, so a request's ``labels`` is one dict lookup rather than
    the fits and Prometheus's own (locked) lookup; a new policy's sets (``LabelBounds.use``)
    empty that cache. Values a fit maps elsewhere are never kept: the cache holds no more
    label sets than the instrument's own children."""

    def __init__(self, metric: M, *fits: Fit) -> None:
        self.metric = metric
        self._fits = fits
        owners = {
            id(o): o for f in fits if isinstance(o := getattr(f, "__self__", None), LabelBounds)
        }
        if len(owners) > 1:
            raise ValueError("the fits of one instrument read one LabelBounds")
        # The sets the fits read: when they change, kept children may no longer fit.
        self._owner: LabelBounds | None = next(iter(owners.values()), None)
        self._seen = self._owner.sets if self._owner is not None else None
        self._children: dict[tuple[str, ...], M] = {}

    def labels(self, *values: str) -> M:
        owner = self._owner
        if owner is not None and owner.sets is not self._seen:
            self._children.clear()
            self._seen = owner.sets
        child = self._children.get(values)
        if child is not None:
            return child
        if len(values) != len(self._fits):
            raise ValueError(f"expected {len(self._fits)} label values, got {len(values)}")
        fitted = tuple(fit(v) for fit, v in zip(self._fits, values, strict=True))
        child = self.metric.labels(*fitted)
        if fitted == values:
            self._children[values] = child
        return child
