"""The gateway's live parts, built once per app and shared by its endpoints.

``Gateway`` is what the request path's stages are given (``path.flow.Services``): the
policy holder, backend states, admissions, caches, summaries, the dispatcher and the relay
(the last two once the lifespan has started the upstream connection pool). With a host
``board`` (``serve --workers N``) backend loads, admission slots and tenant buckets are the
host's workers' together (``gateway/host/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from gateway.admission.controller import PoolAdmission
from gateway.admission.fleet import FleetView
from gateway.admission.host_slots import ALONE, HostSlots
from gateway.admission.lease_gate import LeaseGate
from gateway.admission.limits import limit_binds
from gateway.backends.discovery import Discovery
from gateway.backends.registry import BackendRegistry
from gateway.backends.state import BackendState, Health
from gateway.cache.live_cache import CacheHolder
from gateway.classify.vector_use import VectorUse
from gateway.dashboard.history import History
from gateway.dashboard.window import Window
from gateway.host.board import Board
from gateway.host.buckets import HostRateLimiter
from gateway.host.shares import BackendShare, PoolShare
from gateway.metrics import GatewayMetrics
from gateway.path.context import RequestContext
from gateway.path.dispatch import Dispatcher
from gateway.path.relay import Proxy
from gateway.path.report import Reporter
from gateway.policy.compile import BackendSpec, CompiledPolicy, PoolSpec
from gateway.policy.reload import PolicyHolder, ReloadResult
from gateway.policy.served_limits import with_served_context
from gateway.recovery.counters import RecoveryMetrics
from gateway.recovery.take_back import own_cap, to_take_back
from gateway.retry_budget import RetryBudget, RetryBudgetSettings
from gateway.rewrite import MemoryPrefixStore, PrefixExplainer
from gateway.rewrite.summaries import SummaryService
from gateway.runtime.gauges import breaker_level, watch_admission, watch_backends
from gateway.runtime.own_requests import INTERNAL_MODEL, InternalCompletion, backend_answer
from gateway.scheduling.scheduler import Scheduler
from gateway.security.tenant_limits import TenantRateLimits
from gateway.upstream import ConnectionPool


@dataclass
class Gateway:
    holder: PolicyHolder
    backends: BackendRegistry
    metrics: GatewayMetrics
    clock: Callable[[], float]
    scheduler: Scheduler
    report: Reporter
    dashboard: Window = field(default_factory=Window)
    history: History = field(default_factory=History)  # sampled by the app's lifespan
    _proxy: Proxy | None = None
    _dispatcher: Dispatcher | None = None
    budget: RetryBudget | None = None
    upstream: ConnectionPool | None = None
    admissions: dict[str, PoolAdmission] = field(default_factory=dict)
    prefix_store: MemoryPrefixStore | None = None
    summaries: SummaryService | None = None
    _prefix_key: object = None
    caches: CacheHolder = field(init=False)
    started_at: int = field(default_factory=lambda: int(time.time()))
    lease_gates: Callable[[str], LeaseGate] | None = None  # cluster admission, when on
    rate_limits: TenantRateLimits = field(init=False)
    recovery: RecoveryMetrics = field(init=False)  # hedges, failovers, continuations
    # Replicas found by DNS for the backends that ``discover`` theirs (run by the lifespan).
    discovery: Discovery = field(default_factory=Discovery)
    board: Board | None = None  # the host's, with ``serve --workers N``
    host_wake: asyncio.Event = field(default_factory=asyncio.Event)  # a request waits

    def __post_init__(self) -> None:
        local = HostRateLimiter(self.board, self.clock) if self.board is not None else None
        self.rate_limits = TenantRateLimits(self.clock, local=local)
        self.recovery = RecoveryMetrics(self.metrics.registry)

    @classmethod
    def create(
        cls,
        policy: CompiledPolicy,
        *,
        path: Path | None,
        metrics: GatewayMetrics,
        clock: Callable[[], float],
        board: Board | None = None,
    ) -> Gateway:
        share = partial(BackendShare, board) if board is not None else None
        gateway = cls(
            PolicyHolder(policy),
            BackendRegistry(clock, share),
            metrics,
            clock,
            Scheduler(clock),
            Reporter(clock, metrics=metrics),
            board=board,
        )
        gateway.caches = CacheHolder(metrics, clock)
        gateway.holder = PolicyHolder(
            policy, path=path, on_swap=gateway.on_swap, on_result=gateway.on_reload
        )
        gateway.on_swap(policy)
        return gateway

    @property
    def policy(self) -> CompiledPolicy:
        return self.holder.current

    def start(
        self, proxy: Proxy, pool: ConnectionPool, sleep: Callable[[float], Awaitable[None]]
    ) -> None:
        """Wire the parts that need the running lifespan (the upstream pool)."""
        assert self.budget is not None
        self._proxy = proxy
        self.upstream = pool
        self._dispatcher = Dispatcher(
            backends=self.backends,
            scheduler=self.scheduler,
            proxy=proxy,
            metrics=self.metrics,
            budget=self.budget,
            clock=self.clock,
            report=self.report,
            recovery=self.recovery,
            pool_state=self.hedging_state,
            sleep=sleep,
        )
        self.summaries = SummaryService(InternalCompletion(self), self.metrics, clock=self.clock)

    def hedging_state(self, pool: str) -> tuple[float, bool]:
        """Seconds since ``pool`` was last saturated (0: it is now; inf: never), and whether
        anything waits there (its queue, or its engines' reports), for the hedge decision
        (``recovery/hedging.py``)."""
        admission = self.admissions.get(pool)
        if admission is None:
            return math.inf, False
        waits = bool(admission.queue) or any(s.load.waiting > 0 for s in self._states(pool))
        if admission.state().saturated:
            return 0.0, waits
        return admission.saturation.calm_s(self.clock()), waits

    async def stop(self) -> None:
        """Stop background work started by requests (summaries being written)."""
        if self.summaries is not None:
            await self.summaries.close()

    @property
    def started(self) -> bool:
        return self._dispatcher is not None

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            raise RuntimeError("the gateway's lifespan has not started")
        return self._dispatcher

    @property
    def relay(self) -> Proxy:
        if self._proxy is None:
            raise RuntimeError("the gateway's lifespan has not started")
        return self._proxy

    def verify_hit(self, ctx: RequestContext) -> Awaitable[dict[str, Any]]:
        return backend_answer(self, ctx)

    def on_swap(self, policy: CompiledPolicy) -> None:
        """Called with the new policy just before it becomes active."""
        before = {s.name: s.spec for s in self.backends.all()}
        self.backends.reconcile(policy)
        self._forget_removed(before)
        self.scheduler.reconcile(policy)
        self.report.access.enabled = policy.source.server.access_log
        self.report.configure(policy.source.tracing)
        self.report.redactor = policy.redactor
        self._reconcile_admission(policy)
        self._reconcile_prefix_store(policy)
        embeds = policy.classify.vector_use is VectorUse.EMBED  # routing makes embeddings
        self.caches.reconcile(policy.source.cache, policy.source.classify.knn, embeds)
        settings = RetryBudgetSettings(**policy.source.retry_budget.model_dump())
        if self.budget is None or self.budget.settings != settings:
            self.budget = RetryBudget(settings, self.clock)
            if self._dispatcher is not None:
                self._dispatcher.budget = self.budget
        self.metrics.policy_info.clear()
        self.metrics.policy_info.labels(policy.digest[:12]).set(1)
        self.metrics.bounds.use(
            models=[*policy.models, INTERNAL_MODEL],  # the gateway's own summary calls
            tenants=policy.source.auth.tenants,
            pools=policy.pools,
            backends=(b.name for b in policy.backends),
        )
        for state in self.backends.all():
            self.on_health_change(state)
        watch_backends(self.metrics, self.backends.all())

    def _forget_removed(self, before: Mapping[str, BackendSpec]) -> None:
        """A backend gone from the policy (a replica DNS no longer names): its per-backend
        series go (they would show it healthy forever), and so do its idle connections."""
        for name, spec in before.items():
            state = self.backends.get(name)
            if state is not None and state.spec.url == spec.url:
                continue
            if state is None:
                with contextlib.suppress(KeyError):
                    self.metrics.backend_healthy.remove(name, spec.pool)
                with contextlib.suppress(KeyError):
                    self.metrics.breaker_state.remove(name)
            if self.upstream is not None:
                self.upstream.forget(spec.origin)

    def _reconcile_prefix_store(self, policy: CompiledPolicy) -> None:
        tracking = policy.source.rewrite.prefix_tracking
        key = (policy.rewrite, tracking)
        if not tracking.enabled:
            self.prefix_store, self._prefix_key = None, None
        elif key != self._prefix_key:
            # The explainer's patterns come from the rewrite settings: new ones, new memory.
            self.prefix_store = MemoryPrefixStore(
                PrefixExplainer(policy.rewrite.matcher),
                clock=self.clock,
                max_sessions=tracking.max_sessions,
                ttl_s=tracking.ttl_s,
                max_chars=tracking.max_chars,
            )
            self._prefix_key = key

    def _reconcile_admission(self, policy: CompiledPolicy) -> None:
        fresh: dict[str, PoolAdmission] = {}
        for name, pool in policy.pools.items():
            old = self.admissions.get(name)
            same = old is not None and old.pool.settings.admission == pool.settings.admission
            if old is not None and same and old.pool.capacity == pool.capacity:
                old.pool = pool
                fresh[name] = old
            else:
                # Waiters of a replaced pool state still drain through it as its slots free.
                fresh[name] = PoolAdmission(
                    pool,
                    clock=self.clock,
                    metrics=self.metrics,
                    fleet=FleetView(
                        load=partial(self._pool_load, name),
                        ttft=partial(self._best_ttft, name),
                        slots=partial(self._engine_slots, name),
                        limits_shown=partial(self._limits_shown, name),
                        slots_shown=partial(self._slots_shown, name),
                        waiting=partial(self._engine_waiting, name),
                        asked=partial(self._asked, name),
                    ),
                    leases=self._lease_gate(pool),
                    host=self._host_slots(pool),
                )
            watch_admission(self.metrics, fresh[name])
        self.admissions = fresh

    def _host_slots(self, pool: PoolSpec) -> HostSlots:
        """The pool's slots on the host board, per admission settings: an admission that a
        reload replaced drains its holders on its own cells."""
        if self.board is None:
            return ALONE
        settings = pool.settings.admission.model_dump_json() + str(pool.capacity)
        digest = hashlib.blake2b(settings.encode(), digest_size=6).hexdigest()
        return PoolShare(self.board, f"{pool.name}:{digest}", self.host_wake.set)

    def attach_lease_gates(self, gates: Callable[[str], LeaseGate]) -> None:
        """Cluster admission started: every pool's slots now also need its gate's lease."""
        self.lease_gates = gates
        for admission in self.admissions.values():
            admission.pump.leases = self._lease_gate(admission.pool)

    def _lease_gate(self, pool: PoolSpec) -> LeaseGate | None:
        """The pool's cluster lease gate, where its limit can bind: an uncapped static limit
        grants every lease, and asking Redis for one would only delay each request."""
        binds = limit_binds(pool.settings.admission.limit, pool.capacity)
        return self.lease_gates(pool.name) if self.lease_gates and binds else None

    def _states(self, pool: str) -> Sequence[BackendState]:
        policy = self.policy
        return self.backends.in_pool(policy, pool) if pool in policy.pools else ()

    def _pool_load(self, pool: str) -> tuple[float, float]:
        states = self._states(pool)
        if not states:
            return 0.0, 0.0
        return self._engine_waiting(pool), sum(s.load.kv_usage for s in states) / len(states)

    def _engine_waiting(self, pool: str) -> float:
        """Requests waiting inside the pool's engines, by their fresh reports."""
        return sum(s.load.waiting for s in self._states(pool) if s.reports_waiting)

    def _limits_shown(self, pool: str) -> bool:
        """Every routable replica's cap is a limit it showed (the policy's, or a batch size
        read twice), none a probe of its room nor a single read's sighting: a queue behind
        them is evidence that the pool is full."""
        return all(s.limit_shown for s in self._states(pool) if s.routable)

    def _slots_shown(self, pool: str) -> int | None:
        """What the pool's routable replicas have shown they run at once (None: none)."""
        shown = [s.slots_shown for s in self._states(pool) if s.routable]
        return sum(shown) if shown else None

    def _asked(self, pool: str, prompt_tokens: float) -> None:
        if (sizes := self.backends.asked(pool)) is not None:
            sizes.add(prompt_tokens)

    def _engine_slots(self, pool: str) -> int | None:
        """What the pool's routable replicas take at once (``BackendState.dispatch_cap``);
        None with none routable, so the dispatch stage says why nothing can serve."""
        caps = [s.dispatch_cap for s in self._states(pool) if s.routable]
        return sum(caps) if caps else None

    def prompt_tokens(self, pool: str, chars: int) -> float:
        """The prompt tokens the pool's backends are expected to count for ``chars``
        characters (their mean; each learns its own from its ``usage``)."""
        states = self._states(pool)
        if not states:
            return chars / 4  # nobody to ask: the usual four characters a token
        return sum(s.token_count.estimate(chars) for s in states) / len(states)

    def _best_ttft(self, pool: str, prompt_tokens: float) -> tuple[float, bool] | None:
        """The lowest predicted TTFT among the pool's routable replicas (those with a free
        slot; with none, as the next slot frees), for a prompt that misses the prefix cache
        as often as the replica's recent traffic did, and whether it rests on that replica's
        observations; None without a routable replica."""
        return min(
            (
                s.ttft_prediction(u, at_next_slot=later)
                for s, u, later in self._candidates(pool, prompt_tokens)
            ),
            default=None,
        )

    def _candidates(
        self, pool: str, prompt_tokens: float
    ) -> list[tuple[BackendState, float, bool]]:
        """The replicas admission predicts on (with a free slot; with none, every routable
        one, as the next slot frees), each with the prompt's tokens expected to miss its
        prefix cache (as often as its recent traffic did), and whether it is at its next
        slot."""
        routable = [s for s in self._states(pool) if s.routable]
        free = [s for s in routable if s.has_capacity]
        later = not free
        return [
            (s, prompt_tokens * (1.0 - (s.prefix_hit_rate or 0.0)), later) for s in free or routable
        ]

    def learned_context(self, served: Mapping[str, int]) -> None:
        """The backends' served context lengths: pools without ``max_context`` take them."""
        self.holder.refine(partial(with_served_context, served=served))

    def on_reload(self, result: ReloadResult) -> None:
        self.metrics.policy_reloads.labels("success" if result.ok else "failure").inc()

    def on_load_read(self, state: BackendState) -> None:
        """A replica's metrics were read: what it shows queued of ours beyond its cap is taken
        back (``recovery/take_back.py``); its cap may have risen, and waiters may go."""
        if state.batch_limited and state.reports_waiting:
            cap = own_cap(state.inflight, state.host_inflight, state.dispatch_cap)
            excess = to_take_back(state.movable, state.inflight, cap, state.load.waiting)
            for ahead, request in enumerate(excess):  # in the engine's order
                request.take_back(ahead)
        admission = self.admissions.get(state.spec.pool)
        if admission is not None and admission.queue:
            admission.dispatch()
            # A limit it showed now (a full batch) makes the waits evidence: refuse at once
            # the waiters that cannot be served in time, not at their next release.
            admission.recheck()

    def on_health_change(self, state: BackendState) -> None:
        gauge = self.metrics.backend_healthy.labels(state.name, state.spec.pool)
        gauge.set(1 if state.health is Health.HEALTHY else 0)
        admission = self.admissions.get(state.spec.pool)
        if admission is not None:
            admission.dispatch()  # a replica more: its slots go to waiters
            admission.recheck()  # a replica fewer (or more): every waiter's prediction moved
        # Read at scrape time: the breaker moves from open to half-open by the clock alone.
        self.metrics.breaker_state.labels(state.name).set_function(partial(breaker_level, state))

    def pool_states(self) -> list[BackendState]:
        return list(self.backends.all())
