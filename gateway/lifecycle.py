"""One request's hold on a backend, and the single place its outcome is recorded.

``Lease.finish`` is the gateway's ``on_complete``: it releases the in-flight slot, records
metrics and feeds passive health (a failed connection counts as a failed probe). It runs
exactly once, however the request ends (success, error, client gone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.backends.health import record_probe
from gateway.backends.state import BackendState
from gateway.metrics import GatewayMetrics
from gateway.pipeline import Plan, RequestContext


@dataclass(slots=True)
class Outcome:
    status: int
    first_token_at: float | None = None
    error_kind: str | None = None


class Lease:
    """Holds an in-flight slot on ``backend`` from dispatch until ``finish``."""

    def __init__(
        self,
        ctx: RequestContext,
        plan: Plan,
        backend: BackendState,
        metrics: GatewayMetrics,
        clock: Callable[[], float],
    ) -> None:
        self.ctx = ctx
        self.plan = plan
        self.backend = backend
        self._metrics = metrics
        self._clock = clock
        self._done = False
        backend.inflight += 1
        metrics.inflight.labels(plan.pool.name).inc()

    def finish(self, outcome: Outcome) -> None:
        if self._done:
            return
        self._done = True
        self.backend.inflight -= 1
        m = self._metrics
        pool = self.plan.pool.name
        m.inflight.labels(pool).dec()
        m.requests.labels(
            self.ctx.request.model, pool, self.backend.name, str(outcome.status)
        ).inc()
        end = self._clock()
        m.e2e.labels(pool).observe(end - self.ctx.arrival)
        if outcome.first_token_at is not None:
            m.ttft.labels(pool).observe(outcome.first_token_at - self.ctx.arrival)
        if outcome.error_kind is not None:
            m.upstream_errors.labels(self.backend.name, outcome.error_kind).inc()
        if outcome.error_kind == "upstream_connect":
            record_probe(self.backend, False, self.ctx.policy.source.health)
            m.backend_healthy.labels(self.backend.name, pool).set(
                0 if not self.backend.routable else 1
            )
