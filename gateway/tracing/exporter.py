"""Export finished requests as OpenTelemetry spans over OTLP/HTTP.

One root span ``gateway.openai.request`` per traced request (attributes: request id, public model,
pool, backend, status, error, stream), with one child span per stage interval
(``marks.intervals``). Times on the gateway's monotonic clock are mapped to wall-clock
nanoseconds at export. Spans go through the SDK's batch processor, whose exporter runs in its
own thread: the event loop never waits on the collector. Sampling by trace id ratio.

Parameters: the policy's ``tracing`` settings (endpoint, service name, sample ratio, export
timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from gateway.schema import Tracing

_ATTRIBUTES = ("id", "tenant", "model", "pool", "backend", "status", "error", "cache", "stream")


class RequestTracer:
    def __init__(
        self,
        settings: Tracing,
        clock: Callable[[], float],
        exporter: SpanExporter | None = None,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": settings.service_name}),
            sampler=TraceIdRatioBased(settings.sample_ratio),
        )
        exporter = exporter or OTLPSpanExporter(
            endpoint=settings.otlp_endpoint, timeout=settings.export_timeout_s
        )
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self._provider.get_tracer("latency-gateway")

    def record(
        self,
        fields: Mapping[str, Any],
        arrival: float,
        end: float,
        stages: Sequence[tuple[str, float, float]],
    ) -> None:
        to_ns = self._wall_ns()
        root = self._tracer.start_span(
            "gateway.openai.request", kind=SpanKind.SERVER, start_time=to_ns(arrival)
        )
        if not root.is_recording():
            return  # not sampled
        for key in _ATTRIBUTES:
            value = fields.get(key)
            if value is not None:
                root.set_attribute(f"gateway.{key}", value)
        status = fields.get("status")
        if isinstance(status, int) and status >= 500:
            root.set_status(Status(StatusCode.ERROR, str(fields.get("error"))))
        parent = set_span_in_context(root)
        for stage, start, stop in stages:
            span = self._tracer.start_span(
                f"gateway.{stage}", context=parent, start_time=to_ns(start)
            )
            span.end(end_time=to_ns(stop))
        root.end(end_time=to_ns(end))

    def shutdown(self) -> None:
        self._provider.shutdown()

    def _wall_ns(self) -> Callable[[float], int]:
        # One offset per request: both clocks read together, so stages keep their spacing.
        offset = time.time_ns() - int(self._clock() * 1e9)
        return lambda t: offset + int(t * 1e9)
