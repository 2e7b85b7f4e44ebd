"""The instruments of what happens after dispatch: hedges, failovers before the first token,
continuations of streams cut short (on the gateway's injected registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class RecoveryMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.hedges = Counter(
            "gateway_hedges",
            "First-token races, by pool and event: sent (a hedge went out), won (the hedge's "
            "first token came first), cancelled (an attempt that lost, cancelled at once)",
            ["pool", "event"],
            registry=registry,
        )
        self.failovers = Counter(
            "gateway_failovers",
            "Attempts given up before their first token and moved to another replica, by pool "
            "and reason (stall, error, taken_back), or taken back to the gateway's queue "
            "(requeued)",
            ["pool", "reason"],
            registry=registry,
        )
        self.continuations = Counter(
            "gateway_continuations",
            "Streams cut short after some tokens, by pool and result: ok (continued on another "
            "replica), failed (a continuation was tried and failed), impossible (ended with an "
            "error event)",
            ["pool", "result"],
            registry=registry,
        )

    def instruments(self) -> tuple[Counter, ...]:
        """The counters, for the dashboard's snapshot (``dashboard/snapshot.py``)."""
        return self.hedges, self.failovers, self.continuations
