"""OpenTelemetry traces to a real OTLP/HTTP endpoint on loopback: a root span per request
with its stages as child spans, sent when tracing is configured (and only then)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.servers import serve


class Collector:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.content_types: list[str] = []
        self._lock = threading.Lock()

    async def traces(self, request: Request) -> Response:
        export = ExportTraceServiceRequest.FromString(await request.body())
        with self._lock:
            self.content_types.append(request.headers.get("content-type", ""))
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(scope.spans)
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )


@pytest.fixture
def collector() -> Iterator[tuple[str, Collector]]:
    sink = Collector()
    app = Starlette(routes=[Route("/v1/traces", sink.traces, methods=["POST"])])
    with serve(app) as url:
        yield url, sink


def _attrs(span: Span) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = value.string_value or value.int_value or value.bool_value
    return out


def test_spans_per_request_with_stage_children(
    upstream: str, start_gateway: GatewayFactory, collector: tuple[str, Collector]
) -> None:
    url, sink = collector
    extra = f"tracing: {{enabled: true, otlp_endpoint: '{url}/v1/traces'}}\n"
    with start_gateway(single_pool(upstream, extra=extra)) as gateway:
        client = openai.OpenAI(base_url=gateway + "/v1", api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert [c for c in stream]
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="nope", messages=[{"role": "user", "content": "x"}]
            )
    # The gateway's shutdown flushed the batch.
    assert sink.content_types
    assert all(ct == "application/x-protobuf" for ct in sink.content_types)
    roots = [s for s in sink.spans if s.name == "gateway.openai.request"]
    assert len(roots) == 2
    served = next(r for r in roots if _attrs(r)["gateway.status"] == 200)
    refused = next(r for r in roots if _attrs(r)["gateway.status"] == 404)
    assert _attrs(served)["gateway.pool"] == "small"
    assert _attrs(served)["gateway.backend"] == "small-0"

    def children(root: Span) -> list[Span]:
        return sorted(
            (s for s in sink.spans if s.parent_span_id == root.span_id),
            key=lambda s: s.start_time_unix_nano,
        )

    stages = [s.name for s in children(served)]
    assert stages == [
        "gateway.rewrite",
        "gateway.cache",
        "gateway.plan",
        "gateway.compress",
        "gateway.admit",
        "gateway.upstream_open",
        "gateway.first_token",
        "gateway.relay",
    ]
    for child in children(served):
        assert child.trace_id == served.trace_id
        assert served.start_time_unix_nano <= child.start_time_unix_nano
        assert child.start_time_unix_nano <= child.end_time_unix_nano <= served.end_time_unix_nano
    assert [s.name for s in children(refused)] == [
        "gateway.rewrite",
        "gateway.cache",
        "gateway.refused",
    ]


def test_no_spans_when_tracing_is_off(
    upstream: str, start_gateway: GatewayFactory, collector: tuple[str, Collector]
) -> None:
    url, sink = collector
    extra = f"tracing: {{enabled: false, otlp_endpoint: '{url}/v1/traces'}}\n"
    with start_gateway(single_pool(upstream, extra=extra)) as gateway:
        client = openai.OpenAI(base_url=gateway + "/v1", api_key="k", max_retries=0)
        client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "hi"}])
    assert sink.spans == []
