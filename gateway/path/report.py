"""Where a finished request is reported: the access log, per-tenant metrics, and traces when
tracing is on. Every request a client sent ends here once, served, replayed or refused; a
refusal is counted here in ``gateway_requests_total`` (a served request in its lease, a cache
hit in the cache stage)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gateway.access_log import AccessLog, ms
from gateway.errors import GatewayError
from gateway.metric_labels import NO_BACKEND, NO_POOL
from gateway.metrics import GatewayMetrics
from gateway.path.context import RequestContext
from gateway.schema import Tracing
from gateway.security.redact import Redactor
from gateway.tracing.marks import intervals

if TYPE_CHECKING:
    from gateway.tracing.exporter import RequestTracer


class Reporter:
    def __init__(
        self,
        clock: Callable[[], float],
        access: AccessLog | None = None,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.access = access or AccessLog()
        self._clock = clock
        self._metrics = metrics
        self.tracer: RequestTracer | None = None
        self.redactor = Redactor()  # the active policy's (set on each policy swap)

    def configure(self, settings: Tracing) -> None:
        """Start, restart or stop tracing to match the policy (called on each policy swap)."""
        if self.tracer is not None and (not settings.enabled or self.tracer.settings != settings):
            self.tracer.shutdown()
            self.tracer = None
        if settings.enabled and self.tracer is None:
            # Imported here: OpenTelemetry costs start-up time and is off by default.
            from gateway.tracing.exporter import RequestTracer

            self.tracer = RequestTracer(settings, self._clock)

    def finished(
        self,
        fields: dict[str, Any],
        arrival: float,
        end: float,
        stage_ends: Sequence[tuple[str, float]],
    ) -> None:
        fields = self.redactor.fields(fields, _OUTSIDE_TEXT)
        self.access.write(fields)
        if self._metrics is not None and fields.get("tenant") is not None:
            _count_tenant(self._metrics, fields)
        if self.tracer is not None:
            self.tracer.record(fields, arrival, end, intervals(arrival, stage_ends))

    def refused(
        self,
        exc: GatewayError,
        headers: Mapping[str, str],
        arrival: float,
        ctx: RequestContext | None,
        known: Mapping[str, Any] | None = None,
    ) -> None:
        """A refusal's access-log line (a served request logs in its lease); ``known``: the
        fields of a request refused before its context existed."""
        now = self._clock()
        fields = {
            **(request_fields(ctx, now) if ctx is not None else known or {}),
            "id": headers["x-gateway-request-id"],
            "cache": headers.get("x-gateway-cache"),  # the stage's result, set on the way
            "duration_ms": ms(now - arrival),
            "pool": headers.get("x-gateway-pool") or exc.headers.get("x-gateway-pool"),
            "backend": exc.headers.get("x-gateway-backend"),
            "status": exc.http_status(),
            "error": exc.code or exc.type,
        }
        if self._metrics is not None:
            # A refusal is an answer too: in the one requests counter, by its status.
            self._metrics.requests.labels(
                fields.get("model") or "",
                fields["pool"] or NO_POOL,
                fields["backend"] or NO_BACKEND,
                str(fields["status"]),
                fields["cache"] or "bypass",
            ).inc()
        ends = [*(ctx.marks.ends if ctx is not None else ()), ("refused", now)]
        self.finished(fields, arrival, now, ends)

    def close(self) -> None:
        if self.tracer is not None:
            self.tracer.shutdown()
            self.tracer = None


# Fields holding what a client or backend wrote (a model name, a backend's error code).
_OUTSIDE_TEXT = ("model", "error")


def _count_tenant(metrics: GatewayMetrics, fields: dict[str, Any]) -> None:
    tenant = fields["tenant"]
    metrics.tenant_requests.labels(tenant, fields.get("model") or "", str(fields["status"])).inc()
    for kind, key in (("prompt", "tokens_in"), ("completion", "tokens_out")):
        if fields.get(key):
            metrics.tenant_tokens.labels(tenant, kind).inc(fields[key])


def request_fields(ctx: RequestContext, now: float) -> dict[str, Any]:
    """The access-log fields every line of a parsed request has; callers add the rest."""
    return {
        "id": ctx.request_id,
        "tenant": ctx.tenant,
        "model": ctx.request.model,
        "cache": ctx.cache,
        "stream": ctx.request.stream,
        "priority": ctx.priority.name.lower(),
        "duration_ms": ms(now - ctx.arrival),
    }
