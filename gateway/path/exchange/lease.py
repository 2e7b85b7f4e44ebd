"""One attempt's hold on a backend, and the single place its outcome is recorded.

``Lease.finish`` is the gateway's ``on_complete``: it releases the in-flight slot, gives the
backend's circuit breaker its verdict, feeds passive health (a refused connection counts as a
failed probe) and records metrics. It runs exactly once per attempt, however the attempt ends.
An attempt that is retried elsewhere (``Outcome.retried``) counts as an upstream failure,
not as a finished client request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gateway.access_log import ms
from gateway.admission.permit import Permit
from gateway.backends.health import record_probe
from gateway.backends.state import BackendState
from gateway.metrics import GatewayMetrics
from gateway.openai.messages import prompt_chars
from gateway.path.context import Plan, RequestContext
from gateway.path.report import Reporter, request_fields

# nginx's code for "client closed request": recorded in metrics, never sent.
CLIENT_GONE = 499
# Kinds of end where the gateway closed the exchange before the engine ended it (the stall
# is ``first_token.STALL``), as it does for ``CLIENT_GONE``.
_GAVE_UP = frozenset({"upstream_stall", "upstream_timeout", "total_timeout"})

# Failures that say something about the backend (a 4xx, a 429 or a client leaving do not).
_BACKEND_FAULTS = frozenset(
    {
        "upstream_connect",
        "upstream_status",
        "upstream_timeout",
        "upstream_protocol",
        "upstream_invalid",
        "upstream_stall",
        "total_timeout",
    }
)


class Phase(StrEnum):
    """Where a request was when it ended early (for cancellations)."""

    FIRST_TOKEN = "first_token"
    STREAMING = "streaming"
    NON_STREAMING = "non_streaming"


@dataclass(slots=True)
class Outcome:
    status: int
    first_token_at: float | None = None
    error_kind: str | None = None
    phase: Phase | None = None
    retried: bool = False
    output_tokens: int | None = None
    input_tokens: int | None = None  # from the backend's usage, when it sent one

    @classmethod
    def client_gone(cls, phase: Phase) -> Outcome:
        return cls(CLIENT_GONE, error_kind="client_gone", phase=phase)


class Lease:
    """Holds an in-flight slot on ``backend`` from dispatch until ``finish``."""

    def __init__(
        self,
        ctx: RequestContext,
        plan: Plan,
        backend: BackendState,
        metrics: GatewayMetrics,
        clock: Callable[[], float],
        permit: Permit | None = None,
        report: Reporter | None = None,
        prefix_match: float = 0.0,
    ) -> None:
        self.ctx = ctx
        self.plan = plan
        self.backend = backend
        self._metrics = metrics
        self._clock = clock
        self._permit = permit
        self._report = report
        self._started = clock()
        self._done = False
        # The TTFT predictor's view of this dispatch, learned from when the first token comes.
        self._chars = prompt_chars(ctx.request.body)
        self._uncached = backend.token_count.estimate(self._chars) * (1.0 - prefix_match)
        self._features = backend.ttft_features(self._uncached)
        model = backend.ttft_model
        self._predicted = model.predict(self._features)
        self._upper = model.calibrated(self._predicted)
        self._supported = model.supported(self._features)
        self._observed: float | None = None
        self._pending = True
        backend.sent(self._uncached)
        self._inflight_at = backend.host_inflight
        backend.breaker.on_start()
        metrics.inflight.labels(plan.pool.name).inc()

    @property
    def started(self) -> float:
        """When it was dispatched (the clock's)."""
        return self._started

    @property
    def permit(self) -> Permit | None:
        return self._permit

    @property
    def chars(self) -> int:
        """The prompt's characters (what token counts are estimated from)."""
        return self._chars

    @property
    def uncached_tokens(self) -> float:
        """Its prompt's tokens the replica was expected to compute (prefix cache misses)."""
        return self._uncached

    @property
    def upper_s(self) -> float:
        """Its replica's calibrated predicted TTFT for it (the upper band), from dispatch."""
        return self._upper

    @property
    def supported(self) -> bool:
        """Whether that prediction rests on the replica's observations."""
        return self._supported

    def first_token(self) -> None:
        """The backend is past this request's prefill (prefill pacing counts it no more; the
        TTFT predictor learns how long it took)."""
        if self._permit is not None:
            self._permit.prefilled()
        if self._pending:
            self._not_pending()
            observed = self._observed = self._clock() - self._started
            if self._supported and observed <= self._upper:
                # In line with no queue inside the engine: it had room for all we had sent.
                self.backend.first_token_in_line(self._inflight_at)
            elif self._supported:
                self.backend.first_token_late(observed, self._upper)
            error = self.backend.ttft_model.observe(self._features, observed, self._predicted)
            if self._supported:  # the predictor's error, not its prior's (hedging acts on these)
                direction = "under" if error > 0 else "over"  # under-predicted: it took longer
                pool = self.plan.pool.name
                self._metrics.ttft_prediction_error.labels(pool, direction).observe(abs(error))

    def _not_pending(self) -> None:
        self._pending = False
        self.backend.prefilled(self._uncached)

    def finish(self, outcome: Outcome) -> None:
        if self._done:
            return
        self._done = True
        if self._pending:
            self._not_pending()
        dropped = outcome.status == CLIENT_GONE or outcome.error_kind in _GAVE_UP
        self.backend.done(self._clock() - self._started, aborted=dropped)
        self._metrics.inflight.labels(self.plan.pool.name).dec()
        self._judge(outcome)
        if outcome.input_tokens is not None and outcome.status == 200:
            self.backend.token_count.observe(self._chars, outcome.input_tokens)
        if outcome.error_kind is not None:
            self._metrics.upstream_errors.labels(self.backend.name, outcome.error_kind).inc()
        if not outcome.retried:
            self._record_request(outcome)
            # The backend's own latency (queue wait excluded) steers an adaptive limit and
            # the latency scorer.
            latency = None
            if outcome.first_token_at is not None:
                latency = outcome.first_token_at - self._started
                alpha = self.plan.pool.settings.scheduling.latency_ewma_alpha
                self.backend.observe_ttft(latency, alpha)
            if self._permit is not None:
                self._permit.release(
                    latency_s=latency, dropped=outcome.error_kind in _BACKEND_FAULTS
                )

    def _judge(self, outcome: Outcome) -> None:
        breaker = self.backend.breaker
        if outcome.error_kind in _BACKEND_FAULTS:
            before = breaker.ejections
            breaker.on_failure()
            if breaker.ejections > before:
                self._metrics.ejections.labels(self.backend.name).inc()
        elif outcome.status == 200 and outcome.error_kind is None:
            breaker.on_success()
        else:
            breaker.on_neutral()
        if outcome.error_kind == "upstream_connect":
            record_probe(self.backend, False, self.ctx.policy.source.health)
            self._metrics.backend_healthy.labels(self.backend.name, self.plan.pool.name).set(
                1 if self.backend.routable else 0
            )

    def _record_request(self, outcome: Outcome) -> None:
        m = self._metrics
        pool, length, cache = self.plan.pool.name, self.plan.length, self.ctx.cache or "bypass"
        now = self._clock()
        m.requests.labels(
            self.ctx.request.model, pool, self.backend.name, str(outcome.status), cache
        ).inc()
        m.e2e.labels(pool, length, cache).observe(now - self.ctx.arrival)
        first = outcome.first_token_at
        if first is not None:
            m.ttft.labels(pool, length, cache).observe(first - self.ctx.arrival)
            tokens = outcome.output_tokens or 0
            if tokens > 1 and self.ctx.request.stream:
                m.tpot.labels(pool, length).observe((now - first) / (tokens - 1))
        if outcome.phase is not None and outcome.error_kind == "client_gone":
            m.cancellations.labels(outcome.phase.value).inc()
        if self._report is not None:
            ctx, ends = self.ctx, list(self.ctx.marks.ends)
            if first is not None:
                ends.append(("first_token", first))
            ends.append(("relay" if first is not None else "response", now))
            self._report.finished(self._access_fields(outcome, now), ctx.arrival, now, ends)

    def _access_fields(self, outcome: Outcome, now: float) -> dict[str, Any]:
        ctx, first = self.ctx, outcome.first_token_at
        return {
            **request_fields(ctx, now),
            "pool": self.plan.pool.name,
            "backend": self.backend.name,
            "status": outcome.status,
            "error": outcome.error_kind,
            "queue_ms": ms(self._permit.queued_s if self._permit is not None else None),
            "ttft_ms": ms(None if first is None else first - ctx.arrival),
            # The TTFT predictor's view of this dispatch (backends/ttft.py): what it was given,
            # predicted, and saw (from dispatch, queue excluded).
            "ttft_inputs": self._features.fields(),
            "ttft_predicted_ms": ms(self._predicted),
            "ttft_supported": self._supported,  # resting on observations: not the prior's
            "ttft_backend_ms": ms(self._observed),
            "tokens_in": outcome.input_tokens,
            "tokens_out": outcome.output_tokens,
            "route": self.plan.reason,
        }
