"""What the dashboard shows, read from the gateway's registry, live state and history (with
``serve --workers N``: the host's, every worker's figures together)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gateway.backends.state import BackendState
from gateway.dashboard.history import History, Point, PoolPoint
from gateway.dashboard.snapshot import ALL
from gateway.dashboard.window import Snapshot, Window
from gateway.runtime.host_worker import own_snapshot
from gateway.runtime.parts import Gateway

CACHE_WINDOW_S = 60.0


def view(
    gateway: Gateway, window: Window, since: float | None = None, current: Snapshot | None = None
) -> dict[str, Any]:
    """The page's data; ``since`` (a point's ``at``) limits the history to newer points;
    ``current``: the figures now (default: this process's; ``serve --workers N`` gives the
    host's, ``runtime/host_worker.whole_snapshot``).

    The pools' rates and percentiles are the history's point as of now (``History.current``:
    the same windows as the charts), which the page also draws as the charts' last point,
    so the table and the charts say the same thing at the same moment."""
    now = gateway.clock() if current is None else current.at
    snap = own_snapshot(gateway, now) if current is None else current
    window.add(snap)
    hits = window.rate("cache_hits", ALL, CACHE_WINDOW_S)
    lookups = window.rate("cache_lookups", ALL, CACHE_WINDOW_S)
    live = gateway.history.current(snap)
    points = live.pools if live is not None else {}
    history = history_view(gateway.history, now, since)
    history["live"] = _point(live) if live is not None else None
    return {
        "policy": gateway.policy.digest[:12],
        "cache_hit_rate": hits / lookups if hits is not None and lookups else None,
        "pools": [
            _pool(gateway, name, points.get(name), snap.gauges.get("objective", {}).get(name))
            for name in gateway.policy.pools
        ],
        "backends": [_backend(state) for state in gateway.backends.all()],
        "history": history,
    }


def _pool(
    gateway: Gateway, name: str, point: PoolPoint | None, objective: float | None
) -> dict[str, Any]:
    admission = gateway.admissions.get(name)
    states = gateway.backends.in_pool(gateway.policy, name)
    state = admission.state() if admission is not None else None
    shed = None if point is None else sum(point.shed_per_s.values())
    return {
        "name": name,
        # nominal | saturated | overloaded, and why: whether a 503 was the fleet's limit
        "state": state.state.value if state is not None else "nominal",
        "state_reason": state.reason if state is not None else "",
        "queue_depth": len(admission.queue) + admission.host.queued() if admission else 0,
        "inflight": sum(s.host_inflight for s in states),
        "limit": admission.limit.limit if admission is not None else None,
        "ladder_step": admission.step if admission is not None else 0,
        "admitted_per_s": None if point is None else point.admitted_per_s,
        "shed_per_s": shed,
        "ttft_objective_ms": _ms(objective),
        "ttft_p50_ms": _ms(None if point is None else point.observed_p50_s),
        "ttft_p99_ms": _ms(None if point is None else point.observed_p99_s),
        "prediction_error_p90_ms": _ms(None if point is None else point.prediction_error_p90_s),
        **_recovery(point),
        "healthy_backends": sum(s.ready for s in states),
        "backends": len(states),
    }


def _backend(state: BackendState) -> dict[str, Any]:
    return {
        "name": state.name,
        "pool": state.spec.pool,
        "health": state.health.value,
        "breaker": state.breaker.state.value,
        "inflight": state.host_inflight,
        "waiting": state.load.waiting,
        "kv_usage": state.load.kv_usage,
        "prefix_hit_rate": state.prefix_hit_rate,
    }


def history_view(history: History, now: float, since: float | None) -> dict[str, Any]:
    """The ring's points as JSON: times on the gateway's clock (``now`` is read at the same
    time), seconds rounded to the millisecond, refusals keyed ``reason:priority``."""
    return {
        "now": now,
        "interval_s": history.interval_s,
        "horizon_s": history.horizon_s,
        "points": [_point(p) for p in history.points(since)],
    }


def _point(point: Point) -> dict[str, Any]:
    return {"at": point.at, "pools": {name: _pool_point(p) for name, p in point.pools.items()}}


def _pool_point(p: PoolPoint) -> dict[str, Any]:
    return {
        "objective_s": _s(p.objective_s),
        "predicted_p50_s": _s(p.predicted_p50_s),
        "predicted_p99_s": _s(p.predicted_p99_s),
        "observed_p50_s": _s(p.observed_p50_s),
        "observed_p99_s": _s(p.observed_p99_s),
        "shed_per_s": {f"{r}:{prio}": round(v, 3) for (r, prio), v in p.shed_per_s.items()},
        "queue_depth": p.queue_depth,
        "retry_after_mean_s": _s(p.retry_after_mean_s),
        "retry_after_p99_s": _s(p.retry_after_p99_s),
        "admitted_per_s": _s(p.admitted_per_s),
        "prediction_error_p90_s": _s(p.prediction_error_p90_s),
        **_recovery(p),
    }


def _recovery(p: PoolPoint | None) -> dict[str, Any]:
    """After dispatch: hedges by event, failovers by reason, continuations by result (per
    second), and the extra load share."""
    return {
        "hedges_per_s": _rates(None if p is None else p.hedges_per_s),
        "failovers_per_s": _rates(None if p is None else p.failovers_per_s),
        "continuations_per_s": _rates(None if p is None else p.continuations_per_s),
        "extra_share": None if p is None or p.extra_share is None else round(p.extra_share, 4),
    }


def _rates(rates: Mapping[str, float] | None) -> dict[str, float]:
    return {k: round(v, 3) for k, v in (rates or {}).items()}


def _s(seconds: float | None) -> float | None:
    return None if seconds is None or math.isnan(seconds) else round(seconds, 3)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None or math.isnan(seconds) else round(seconds * 1000, 1)
