"""What the dashboard shows, read from the gateway's registry and live state."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from prometheus_client import CollectorRegistry

from gateway.backends.state import BackendState
from gateway.dashboard.window import Buckets, Snapshot, Window
from gateway.runtime import Gateway

# Counters summed per pool, by the sample name the registry reports.
POOL_COUNTERS = {
    "admitted": "gateway_admitted_total",
    "shed": "gateway_shed_total",
    "finished": "gateway_requests_total",
}
TTFT_BUCKET = "gateway_time_to_first_token_seconds_bucket"
CACHE_LOOKUPS = "gateway_cache_lookups_total"
ALL = "*"  # the pseudo-pool of gateway-wide counters
RATE_WINDOW_S = 10.0
QUANTILE_WINDOW_S = 60.0


def snapshot(registry: CollectorRegistry, at: float) -> Snapshot:
    wanted = {name: key for key, name in POOL_COUNTERS.items()}
    counters: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    buckets: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == CACHE_LOOKUPS:
                _count_cache(counters, sample.labels["result"], sample.value)
                continue
            pool = sample.labels.get("pool")
            if pool is None:
                continue
            if sample.name in wanted:
                counters[wanted[sample.name]][pool] += sample.value
            elif sample.name == TTFT_BUCKET:
                buckets[pool][float(sample.labels["le"])] += sample.value  # lengths summed
    ttft: dict[str, Buckets] = {pool: tuple(sorted(b.items())) for pool, b in buckets.items()}
    return Snapshot(at, counters, ttft)


def _count_cache(counters: dict[str, dict[str, float]], result: str, value: float) -> None:
    if result != "bypass":
        counters["cache_lookups"][ALL] += value
    if result in ("exact", "semantic"):
        counters["cache_hits"][ALL] += value


def view(gateway: Gateway, window: Window) -> dict[str, Any]:
    window.add(snapshot(gateway.metrics.registry, gateway.clock()))
    hits = window.rate("cache_hits", ALL, QUANTILE_WINDOW_S)
    lookups = window.rate("cache_lookups", ALL, QUANTILE_WINDOW_S)
    return {
        "policy": gateway.policy.digest[:12],
        "cache_hit_rate": hits / lookups if hits is not None and lookups else None,
        "pools": [_pool(gateway, window, name) for name in gateway.policy.pools],
        "backends": [_backend(state) for state in gateway.backends.all()],
    }


def _pool(gateway: Gateway, window: Window, name: str) -> dict[str, Any]:
    admission = gateway.admissions.get(name)
    states = gateway.backends.in_pool(gateway.policy, name)
    return {
        "name": name,
        "queue_depth": len(admission.queue) if admission is not None else 0,
        "inflight": sum(s.inflight for s in states),
        "limit": admission.limit.limit if admission is not None else None,
        "ladder_step": admission.step if admission is not None else 0,
        "admitted_per_s": window.rate("admitted", name, RATE_WINDOW_S),
        "shed_per_s": window.rate("shed", name, RATE_WINDOW_S),
        "ttft_p50_ms": _ms(window.quantile(name, 0.5, QUANTILE_WINDOW_S)),
        "ttft_p99_ms": _ms(window.quantile(name, 0.99, QUANTILE_WINDOW_S)),
        "healthy_backends": sum(s.ready for s in states),
        "backends": len(states),
    }


def _backend(state: BackendState) -> dict[str, Any]:
    return {
        "name": state.name,
        "pool": state.spec.pool,
        "health": state.health.value,
        "breaker": state.breaker.state.value,
        "inflight": state.inflight,
        "waiting": state.load.waiting,
        "kv_usage": state.load.kv_usage,
        "prefix_hit_rate": state.prefix_hit_rate,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None or math.isnan(seconds) else round(seconds * 1000, 1)
