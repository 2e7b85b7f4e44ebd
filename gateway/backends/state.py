"""Live state of each backend replica, kept across policy reloads.

A backend keeps its state (in-flight count, health, circuit breaker) through a reload as long
as its name and URL are unchanged; anything else is a new backend and starts fresh: a listed
one as routable before its first probe, a discovered one (``discover``) as unhealthy until a
probe passes. A backend the new policy no longer has is dropped here; requests in flight on
it keep its state through their lease and finish. A changed
breaker setting gives the backend a fresh breaker.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gateway.backends.breaker import BreakerSettings, BreakerState, CircuitBreaker
from gateway.backends.scrape import Load
from gateway.backends.token_count import TokenCount
from gateway.backends.ttft import TtftFeatures, TtftModel
from gateway.policy.compile import BackendSpec, CompiledPolicy

BATCH_CONFIRM_READS = 2  # reads of a full batch at one size before that size is known


class Health(StrEnum):
    UNKNOWN = "unknown"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"


@dataclass(eq=False)
class BackendState:
    spec: BackendSpec
    inflight: int = 0
    health: Health = Health.UNKNOWN
    failures: int = 0
    successes: int = 0
    breaker: CircuitBreaker = field(
        default_factory=lambda: CircuitBreaker(BreakerSettings(), time.monotonic)
    )
    load: Load = field(default_factory=Load)  # last scraped from the backend's /metrics
    ttft_ewma: float | None = None  # seconds, from dispatch to first token
    prefix_hit_rate: float | None = None  # over the last scrape interval
    spec_acceptance: float | None = None  # over the last scrape interval
    # Sent here and not yet at their first token (prefill ahead of a new request).
    pending: int = 0
    slots_seen: float = 0.0  # the most sequences the engine reported running at once
    # A read showed requests waiting while the KV cache had room and the engine ran
    # ``slots_seen``: it runs no more than that at once, so more sent there only queue where
    # nobody can watch them. One read may catch a long prompt's prefill chunk holding the
    # others back with slots free, so the size counts as known after two such reads of it
    # (``load_watch.learn_batch``: far enough apart); until then one more may go.
    batch_limited: bool = False
    batch_full_reads: int = 0  # such reads of the size ``slots_seen``
    batch_read_at: float = -math.inf  # when the last of them was taken
    pending_tokens: float = 0.0
    ttft_model: TtftModel = field(default_factory=TtftModel)
    # Prompt tokens it counts per character sent, learned from its ``usage`` (token_count.py).
    token_count: TokenCount = field(default_factory=TokenCount)

    def ttft_features(self, uncached_tokens: float) -> TtftFeatures:
        """What stands between a request sent now and its first token (``backends/ttft.py``)."""
        return TtftFeatures(
            uncached_tokens=uncached_tokens,
            pending_tokens=self.pending_tokens,
            pending=float(self.pending),
            decoding=float(max(0, self.inflight - self.pending)),
            engine_waiting=self._queued_in_engine(),
        )

    def _queued_in_engine(self) -> float:
        beyond = max(0.0, self.inflight - self.slots_seen) if self.slots_seen > 0 else 0.0
        return max(beyond, self._scraped_queue())

    def _scraped_queue(self) -> float:
        """Other clients' requests queued in the engine, as far as its metrics tell. Once
        capped at its batch, a scraped queue is our own from before the cap (stale by up to a
        scrape interval): only what is in flight beyond the batch counts then."""
        return 0.0 if self.batch_limited else self.load.waiting

    def next_slot_features(self, uncached_tokens: float) -> TtftFeatures:
        """What a request meets when sent as the next slot frees (it waits in the gateway
        until then): every other slot decoding, nothing else in prefill or queued."""
        busy = float(max(0, min(self.inflight, self.dispatch_cap) - 1))
        return TtftFeatures(uncached_tokens, 0.0, 0.0, busy, self._scraped_queue())

    def predict_ttft(self, uncached_tokens: float, *, at_next_slot: bool = False) -> float:
        """Calibrated (``TtftModel.upper``): what admission decides on; ``at_next_slot``:
        for a request that waits for a slot here first."""
        features = (
            self.next_slot_features(uncached_tokens)
            if at_next_slot
            else self.ttft_features(uncached_tokens)
        )
        return self.ttft_model.upper(features)

    def observe_ttft(self, seconds: float, alpha: float) -> None:
        """Fold one TTFT into the exponentially weighted moving average."""
        previous = self.ttft_ewma
        self.ttft_ewma = seconds if previous is None else previous + alpha * (seconds - previous)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def routable(self) -> bool:
        # Unknown counts as routable so the first requests need not wait for the first probe.
        return self.health is not Health.UNHEALTHY and self.breaker.allows()

    @property
    def ready(self) -> bool:
        return self.health is Health.HEALTHY and self.breaker.state is not BreakerState.OPEN

    @property
    def dispatch_cap(self) -> int:
        """The most requests the gateway sends here at once: ``max_inflight``, or fewer once
        the engine's batch limit is known, so the excess waits in the gateway's queue (where
        admission predicts, re-checks and refuses it in time) instead of the engine's."""
        if not self.batch_limited or self.slots_seen < 1:
            return self.spec.max_inflight
        # Until a second read confirms it, one more may go: were the first read a prefill
        # chunk's moment, a cap of exactly what ran would keep it from ever running more.
        probe = 0 if self.batch_known else 1
        return min(self.spec.max_inflight, int(self.slots_seen) + probe)

    @property
    def batch_known(self) -> bool:
        return self.batch_full_reads >= BATCH_CONFIRM_READS

    @property
    def overflowing(self) -> bool:
        """More sent than it was ever seen running, its batch size not yet confirmed: the
        next read of its metrics may show that batch full, or running more (``load_watch.py``
        reads it at once)."""
        # Only an engine whose metrics were seen counting running sequences can tell.
        return not self.batch_known and 0 < self.slots_seen < self.inflight

    @property
    def has_capacity(self) -> bool:
        return self.inflight < self.dispatch_cap


class BackendRegistry:
    """The states of the backends named by the active policy."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._states: dict[str, BackendState] = {}
        self._clock = clock

    def reconcile(self, policy: CompiledPolicy) -> None:
        fresh: dict[str, BackendState] = {}
        for spec in policy.backends:
            settings = BreakerSettings(**policy.pools[spec.pool].settings.breaker.model_dump())
            old = self._states.get(spec.name)
            if old is not None and old.spec.url == spec.url:
                old.spec = spec
                if old.breaker.settings != settings:
                    old.breaker = CircuitBreaker(settings, self._clock)
                fresh[spec.name] = old
            else:
                # A discovered replica gets traffic once a probe passed; a listed one at once.
                health = Health.UNHEALTHY if spec.discovered else Health.UNKNOWN
                breaker = CircuitBreaker(settings, self._clock)
                fresh[spec.name] = BackendState(spec, health=health, breaker=breaker)
        self._states = fresh

    def now(self) -> float:
        return self._clock()

    def get(self, name: str) -> BackendState | None:
        return self._states.get(name)

    def all(self) -> Iterable[BackendState]:
        return tuple(self._states.values())

    def in_pool(self, policy: CompiledPolicy, pool: str) -> list[BackendState]:
        return [
            state
            for spec in policy.pools[pool].backends
            if (state := self._states.get(spec.name)) is not None
        ]

    def pool_ready(self, policy: CompiledPolicy) -> Mapping[str, bool]:
        return {pool: any(s.ready for s in self.in_pool(policy, pool)) for pool in policy.pools}
