"""What the dashboard shows, read from the gateway's registry, live state and history (with
``serve --workers N``: the host's, every worker's figures together)."""

from __future__ import annotations

import math
from typing import Any

from gateway.backends.state import BackendState
from gateway.dashboard.history import History, Point, PoolPoint
from gateway.dashboard.snapshot import ALL, snapshot
from gateway.dashboard.window import Snapshot, Window
from gateway.runtime.parts import Gateway

RATE_WINDOW_S = 10.0
QUANTILE_WINDOW_S = 60.0


def view(
    gateway: Gateway, window: Window, since: float | None = None, current: Snapshot | None = None
) -> dict[str, Any]:
    """The page's data; ``since`` (a point's ``at``) limits the history to newer points;
    ``current``: the figures now (default: this process's)."""
    now = gateway.clock() if current is None else current.at
    window.add(snapshot(gateway.metrics, now) if current is None else current)
    hits = window.rate("cache_hits", ALL, QUANTILE_WINDOW_S)
    lookups = window.rate("cache_lookups", ALL, QUANTILE_WINDOW_S)
    return {
        "policy": gateway.policy.digest[:12],
        "cache_hit_rate": hits / lookups if hits is not None and lookups else None,
        "pools": [_pool(gateway, window, name) for name in gateway.policy.pools],
        "backends": [_backend(state) for state in gateway.backends.all()],
        "history": history_view(gateway.history, now, since),
    }


def _pool(gateway: Gateway, window: Window, name: str) -> dict[str, Any]:
    admission = gateway.admissions.get(name)
    states = gateway.backends.in_pool(gateway.policy, name)
    newest = window.newest
    objective = newest.gauges.get("objective", {}).get(name) if newest is not None else None
    state = admission.state() if admission is not None else None
    return {
        "name": name,
        # nominal | saturated | overloaded, and why: whether a 503 was the fleet's limit
        "state": state.state.value if state is not None else "nominal",
        "state_reason": state.reason if state is not None else "",
        "queue_depth": len(admission.queue) + admission.host.queued() if admission else 0,
        "inflight": sum(s.host_inflight for s in states),
        "limit": admission.limit.limit if admission is not None else None,
        "ladder_step": admission.step if admission is not None else 0,
        "admitted_per_s": window.rate("admitted", name, RATE_WINDOW_S),
        "shed_per_s": window.rate("shed", name, RATE_WINDOW_S),
        "ttft_objective_ms": _ms(objective),
        "ttft_p50_ms": _ms(window.quantile(name, 0.5, QUANTILE_WINDOW_S)),
        "ttft_p99_ms": _ms(window.quantile(name, 0.99, QUANTILE_WINDOW_S)),
        "prediction_error_p90_ms": _ms(
            window.quantile(name, 0.9, QUANTILE_WINDOW_S, "prediction_error")
        ),
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
    }


def _s(seconds: float | None) -> float | None:
    return None if seconds is None or math.isnan(seconds) else round(seconds, 3)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None or math.isnan(seconds) else round(seconds * 1000, 1)
