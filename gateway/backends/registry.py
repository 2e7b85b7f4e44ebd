"""The states of the backends the active policy names, kept across policy swaps: a backend
whose name and URL stay keeps its state (in flight, health, learned batch and TTFT model),
a new or moved one starts fresh (a discovered one unhealthy until its probe passes). The
prompt sizes asked of a pool (``asked.py``) are the pool's, one record its replicas share
(kept across swaps by the pool's name): a request updates it once, not once per replica."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from gateway.backends.asked import AskedSizes
from gateway.backends.breaker import BreakerSettings, CircuitBreaker
from gateway.backends.seams import HostShare
from gateway.backends.state import BackendState, Health
from gateway.backends.ttft import TtftModel
from gateway.policy.compile import CompiledPolicy

Pool = tuple[BackendState, ...]


class BackendRegistry:
    """The states of the backends named by the active policy."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        share: Callable[[str], HostShare] | None = None,
    ) -> None:
        self._states: dict[str, BackendState] = {}
        self._clock = clock
        self._share = share  # the host board's view of a backend, with ``serve --workers``
        # Each pool's states, as ``in_pool`` last made them: for that policy and ``_states``.
        self._pools: dict[str, tuple[CompiledPolicy, dict[str, BackendState], Pool]] = {}
        self._asked: dict[str, AskedSizes] = {}  # each pool's, shared by its replicas

    def reconcile(self, policy: CompiledPolicy) -> None:
        asked = {pool: self._asked.get(pool) or AskedSizes() for pool in policy.pools}
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
                # Keyed by name and URL, as the state is: a new URL is a new backend.
                share = self._share(f"{spec.name} {spec.url}") if self._share else None
                fresh[spec.name] = BackendState(
                    spec,
                    health=health,
                    breaker=CircuitBreaker(settings, self._clock),
                    clock=self._clock,
                    host=share,
                    # Folds what it learned at most every ``FOLD_S`` of this clock.
                    ttft_model=TtftModel(clock=self._clock),
                )
            fresh[spec.name].asked = asked[spec.pool]
        self._states, self._asked = fresh, asked
        self._pools = {}

    def asked(self, pool: str) -> AskedSizes | None:
        """The prompt sizes asked of ``pool`` lately (None: no such pool in the policy)."""
        return self._asked.get(pool)

    def now(self) -> float:
        return self._clock()

    def get(self, name: str) -> BackendState | None:
        return self._states.get(name)

    def all(self) -> Iterable[BackendState]:
        return tuple(self._states.values())

    def in_pool(self, policy: CompiledPolicy, pool: str) -> Pool:
        """The states of ``pool``'s backends under ``policy``: made once per policy and
        reconcile (admission reads them several times per request)."""
        made = self._pools.get(pool)
        if made is not None and made[0] is policy and made[1] is self._states:
            return made[2]
        states = tuple(
            state
            for spec in policy.pools[pool].backends
            if (state := self._states.get(spec.name)) is not None
        )
        self._pools[pool] = (policy, self._states, states)
        return states

    def pool_ready(self, policy: CompiledPolicy) -> Mapping[str, bool]:
        return {pool: any(s.ready for s in self.in_pool(policy, pool)) for pool in policy.pools}
