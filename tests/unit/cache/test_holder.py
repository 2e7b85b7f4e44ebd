"""Policy reloads and the cache: what is kept, what is rebuilt."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from gateway.cache.holder import CacheHolder
from gateway.metrics import GatewayMetrics
from gateway.policy.schema import Cache, Knn


def test_reloads_keep_what_did_not_change() -> None:
    holder = CacheHolder(GatewayMetrics(CollectorRegistry()), clock=lambda: 0.0)
    holder.reconcile(Cache(enabled=True))
    first = holder.cache
    assert first is not None
    holder.reconcile(Cache(enabled=True))
    assert holder.cache is first
    holder.reconcile(Cache(enabled=True), Knn(enabled=True, weight=0.5))
    assert holder.cache is first  # the kNN settings alone: answers kept
    holder.reconcile(Cache(enabled=True, ttl_s=10))
    assert holder.cache is not first
    holder.reconcile(Cache(enabled=False))
    assert holder.cache is None
    assert not holder.loading()  # nothing started before the lifespan
